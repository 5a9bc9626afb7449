package dev.leasehold.jdbc;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.spi.ReleaseFanOut;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release notifications on databases without them (MariaDB, H2), by polling the watched keys from
 * one thread per store: one statement per tick reads every watched row, and a grant that ended
 * since the last tick (the row freed or expired, or its fence changed) is announced to the key's
 * subscribers. A tick comes every {@link #interval} at most (50 ms by default), sooner when a
 * watched holder's lease runs out first, so a waiter in another process learns of a release within
 * one tick and of an expiry at once. Force-releases mark the row ({@code holder =}
 * {@value #FORCED}) and are found through the expiry index for store-wide subscribers.
 *
 * <p>Polling compares states, so a failed tick loses nothing: the next one sees the change. Several
 * grants that start and end within one tick are announced once, with the last fence.
 */
final class PolledReleaseWatcher extends FeedThread implements ReleaseFeed {

    /** What a force-release writes into the holder column, so watchers can tell it from a release. */
    static final String FORCED = "(force-released)";

    private static final Logger log = LoggerFactory.getLogger(PolledReleaseWatcher.class);
    private static final String FORCE_RELEASES = "(force-releases)";
    private static final int KEYS_PER_STATEMENT = 200;
    private static final long FORCE_SCAN_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    private static final long FORCE_OVERLAP_MS = 2_000;

    private final DataSource dataSource;
    private final SqlDialect dialect;
    private final long intervalNanos;
    private final ReleaseFanOut releases = new ReleaseFanOut(new ReleaseFanOut.Server() {
        @Override
        public void open(String key) {
            try {
                // The state a later release is compared with: read before the first subscriber returns.
                lastSeen.put(key, read(List.of(key)).getOrDefault(key, FREE));
            } catch (SQLException e) {
                throw failure("subscribe to releases", key, e);
            }
        }

        @Override
        public void close(String key) {
            lastSeen.remove(key);
        }
    });
    private final ReleaseFanOut forceReleases = new ReleaseFanOut();
    private final Map<String, State> lastSeen = new ConcurrentHashMap<>();
    private final Map<String, Long> recentForced = Collections.synchronizedMap(new LinkedHashMap<>());
    private volatile long forceScanFromMs = -1;
    private long nextForceScan;
    private boolean schemaMissing; // the polling thread's

    PolledReleaseWatcher(DataSource dataSource, SqlDialect dialect, Duration interval) {
        this.dataSource = dataSource;
        this.dialect = dialect;
        this.intervalNanos = interval.toNanos();
    }

    /** A key's row as last seen: whether a grant was live, and its fence. */
    private record State(boolean held, long fence, long expiresAtMs) {}

    private static final State FREE = new State(false, 0, 0);

    @Override
    public ReleaseSubscription subscribe(String key, Consumer<ReleaseNotice> onRelease) {
        ReleaseSubscription subscription = releases.subscribe(key, onRelease);
        start();
        return subscription;
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        ReleaseSubscription subscription;
        try {
            if (forceScanFromMs < 0) {
                forceScanFromMs = databaseNow();
            }
        } catch (SQLException e) {
            throw failure("subscribe to releases", FORCE_RELEASES, e);
        }
        subscription = forceReleases.subscribe(FORCE_RELEASES, onForceRelease);
        start();
        return subscription;
    }

    private RuntimeException failure(String operation, String key, SQLException e) {
        SchemaMissingException noSchema = JdbcSchema.missing(e, dialect.database());
        return noSchema != null ? noSchema : new LeaseStoreException(operation, key, e);
    }

    private void start() {
        lock.lock();
        try {
            startIfNeeded("leasehold-" + dialect.database().id() + "-release-watcher");
        } finally {
            lock.unlock();
        }
    }

    @Override
    protected void run() {
        while (!closed) {
            long pause = intervalNanos;
            try {
                pause = Math.min(pause, tick());
                if (!forceReleases.isEmpty() && System.nanoTime() - nextForceScan >= 0) {
                    scanForceReleases();
                    nextForceScan = System.nanoTime() + FORCE_SCAN_NANOS;
                }
                schemaMissing = false;
            } catch (SQLException | RuntimeException e) {
                SchemaMissingException noSchema =
                        e instanceof SQLException sql ? JdbcSchema.missing(sql, dialect.database()) : null;
                if (noSchema == null) {
                    log.warn("polling for releases failed; trying again", e);
                } else if (!schemaMissing) {
                    schemaMissing = true; // said once, in one line, until a poll succeeds
                    log.warn("polling for releases failed: {}", noSchema.getMessage());
                }
                pause = TimeUnit.MILLISECONDS.toNanos(500);
            }
            pause(Math.max(TimeUnit.MILLISECONDS.toNanos(2), pause));
        }
    }

    /** Reads every watched key, announces the grants that ended; returns the nanos to the next expiry. */
    private long tick() throws SQLException {
        List<String> keys = new ArrayList<>(releases.keys());
        long untilExpiry = Long.MAX_VALUE;
        for (int from = 0; from < keys.size(); from += KEYS_PER_STATEMENT) {
            List<String> batch = keys.subList(from, Math.min(keys.size(), from + KEYS_PER_STATEMENT));
            Map<String, State> now = read(batch);
            for (String key : batch) {
                State current = now.getOrDefault(key, FREE);
                State before = lastSeen.replace(key, current); // absent while a first subscriber reads it
                if (before != null) {
                    announce(key, before, current, forcedNow.contains(key));
                }
                if (current.held()) {
                    untilExpiry = Math.min(untilExpiry, Math.max(0, current.expiresAtMs() - lastNowMs));
                }
            }
        }
        return untilExpiry == Long.MAX_VALUE ? Long.MAX_VALUE : TimeUnit.MILLISECONDS.toNanos(untilExpiry + 1);
    }

    private void announce(String key, State before, State current, boolean forced) {
        ReleaseNotice notice = null;
        if (before.held() && (!current.held() || current.fence() != before.fence())) {
            // The grant seen last time ended (released, forced, expired, or taken over after expiry).
            boolean byForce = forced && !current.held() && current.fence() == before.fence();
            notice = new ReleaseNotice(key, before.fence(), byForce);
        } else if (!before.held() && !current.held() && current.fence() != before.fence()) {
            // A grant began and ended between two ticks.
            notice = new ReleaseNotice(key, current.fence(), forced);
        }
        if (notice != null) {
            releases.publish(notice);
        }
    }

    private volatile long lastNowMs;
    private final java.util.Set<String> forcedNow = ConcurrentHashMap.newKeySet();

    /** The rows of {@code keys}: held or not, fence, expiry; also which were force-released. */
    private Map<String, State> read(List<String> keys) throws SQLException {
        String sql = "SELECT l.lock_key, l.fence, l.owner_token, l.expires_at_ms, l.holder, c.now_ms"
                + " FROM (SELECT " + dialect.database().nowMillisSql() + " AS now_ms) c"
                + " LEFT JOIN leasehold_lease l ON l.lock_key IN ("
                + String.join(", ", Collections.nCopies(keys.size(), "?")) + ")";
        Map<String, State> states = new HashMap<>();
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                for (int i = 0; i < keys.size(); i++) {
                    statement.setString(i + 1, keys.get(i));
                }
                try (ResultSet row = statement.executeQuery()) {
                    while (row.next()) {
                        long now = row.getLong(6);
                        lastNowMs = now;
                        String key = row.getString(1);
                        if (key == null) {
                            continue;
                        }
                        boolean held = row.getString(3) != null && row.getLong(4) > now;
                        states.put(key, new State(held, row.getLong(2), row.getLong(4)));
                        if (FORCED.equals(row.getString(5))) {
                            forcedNow.add(key);
                        } else {
                            forcedNow.remove(key);
                        }
                    }
                }
            } finally {
                if (!autoCommit) {
                    connection.rollback();
                }
            }
        }
        return states;
    }

    /** Force-released rows whose release time lies in the last window (with an overlap, de-duplicated). */
    private void scanForceReleases() throws SQLException {
        String sql = "SELECT c.now_ms, l.lock_key, l.fence"
                + " FROM (SELECT " + dialect.database().nowMillisSql() + " AS now_ms) c"
                + " LEFT JOIN leasehold_lease l ON l.expires_at_ms > ? AND l.expires_at_ms <= c.now_ms"
                + " AND l.owner_token IS NULL AND l.holder = ?";
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                statement.setLong(1, forceScanFromMs - FORCE_OVERLAP_MS);
                statement.setString(2, FORCED);
                long now = forceScanFromMs;
                try (ResultSet row = statement.executeQuery()) {
                    while (row.next()) {
                        now = row.getLong(1);
                        String key = row.getString(2);
                        if (key == null) {
                            continue;
                        }
                        long fence = row.getLong(3);
                        String seen = key + "\u0000" + fence;
                        if (recentForced.putIfAbsent(seen, now) == null) {
                            forceReleases.publish(FORCE_RELEASES, new ReleaseNotice(key, fence, true));
                        }
                    }
                }
                forceScanFromMs = now;
                long horizon = now - 2 * FORCE_OVERLAP_MS;
                synchronized (recentForced) {
                    recentForced.values().removeIf(at -> at < horizon);
                }
            } finally {
                if (!autoCommit) {
                    connection.rollback();
                }
            }
        }
    }

    private long databaseNow() throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(
                        "SELECT " + dialect.database().nowMillisSql());
                ResultSet row = statement.executeQuery()) {
            row.next();
            long now = row.getLong(1);
            if (!connection.getAutoCommit()) {
                connection.rollback();
            }
            return now;
        }
    }

    @Override
    public void close() {
        stop();
        releases.closeAll();
        forceReleases.closeAll();
        lastSeen.clear();
    }
}
