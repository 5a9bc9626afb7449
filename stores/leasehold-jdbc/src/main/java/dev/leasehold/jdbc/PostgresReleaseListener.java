package dev.leasehold.jdbc;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.spi.ReleaseFanOut;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release notifications on PostgreSQL: one connection of the store's data source, held for as long
 * as anyone subscribes, LISTENs on {@value PostgresDialect#CHANNEL}; release and force-release
 * notify in their own statement, so a notification arrives exactly when the release commits.
 * A release notifies only when someone waits for its key: a live place in its queue, or a store's
 * watch ({@link PostgresDialect#WATCH}), which this listener keeps for every key it has subscribers
 * for, upserted before a key's first subscription returns and renewed every half second by the
 * listening thread; without subscribers it lapses within {@link #WATCH_TTL}.
 *
 * <p>A daemon thread waits for notifications on that connection and hands each to the
 * subscribers of its key (and force-releases also to the store-wide subscribers), on that thread.
 * If the connection breaks, the thread reconnects with back-off and then tells every key
 * subscriber that a release may have been missed (a notice with fence 0), so waiters try again
 * rather than sleep to their poll bound.
 */
final class PostgresReleaseListener extends FeedThread implements ReleaseFeed {

    private static final Logger log = LoggerFactory.getLogger(PostgresReleaseListener.class);
    private static final int WAIT_MILLIS = 100;
    private static final String FORCE_RELEASES = "(force-releases)";
    private static final Duration SUBSCRIBE_TIMEOUT = Duration.ofSeconds(10);

    /**
     * How long a watch lives without a refresh: a crashed store's watches, and a watch whose key
     * lost its last subscriber, end after this.
     */
    static final Duration WATCH_TTL = Duration.ofSeconds(2);

    /** How often the watches of keys with subscribers are renewed. */
    private static final long REFRESH_NANOS = WATCH_TTL.toNanos() / 4;

    /** How long after its upsert a watch is taken to be live, with room for the clocks and the call. */
    private static final long LIVE_NANOS = WATCH_TTL.toNanos() * 3 / 4;

    private final DataSource dataSource;
    private final StoreCalls calls;
    private final String watchOwner;

    /** Keys watched, with the System.nanoTime() until which their watch is surely live. */
    private final ConcurrentHashMap<String, Long> watchedUntil = new ConcurrentHashMap<>();

    /**
     * A key's first subscriber upserts its watch unless a live one is left from an earlier
     * subscriber; a key's last subscriber leaving lets the watch lapse within {@link #WATCH_TTL}
     * (a waiter that comes back meanwhile costs no statement).
     */
    private final ReleaseFanOut releases = new ReleaseFanOut(new ReleaseFanOut.Server() {
        @Override
        public void open(String key) {
            Long until = watchedUntil.get(key);
            if (until != null && until - System.nanoTime() > 0) {
                return;
            }
            long start = System.nanoTime();
            calls.executeOn("subscribe to releases", key, connection -> {
                watch(connection, List.of(key));
                return null;
            });
            // A release decides whether to notify from the snapshot its statement started with, so
            // one already running may have missed the watch: wait until it commits (its row lock
            // conflicts with FOR SHARE), and the caller's next ask sees what it freed.
            calls.executeOn("subscribe to releases", key, connection -> {
                try (PreparedStatement statement = connection.prepareStatement(PostgresDialect.AWAIT_RELEASES)) {
                    statement.setString(1, key);
                    statement.executeQuery().close();
                }
                return null;
            });
            watchedUntil.put(key, start + LIVE_NANOS);
        }

        @Override
        public void close(String key) {
            // the watch lapses unless a subscriber comes back
        }
    });

    private final ReleaseFanOut forceReleases = new ReleaseFanOut();
    private boolean listening; // guarded by lock
    private SQLException lastFailure; // guarded by lock

    private final String wake;

    PostgresReleaseListener(StoreCalls calls, String wake) {
        this.dataSource = calls.dataSource;
        this.calls = calls;
        this.wake = wake;
        this.watchOwner = PostgresDialect.WATCH_OWNER_PREFIX + wake;
    }

    /**
     * Listens first, then watches the key (on its first subscriber): a release whose statement
     * starts after this returns sees the watch and notifies, and the notification finds the LISTEN
     * in place. A release already holding the key's row when the watch commits is waited for, so
     * the caller's next ask sees its result. One whose statement started before the watch committed
     * but locks the row only after that wait (the span of one statement) can still end unnoticed:
     * the waiter then learns of it at its next poll, as of any lost notification.
     */
    @Override
    public ReleaseSubscription subscribe(String key, Consumer<ReleaseNotice> onRelease) {
        awaitListening(key);
        return releases.subscribe(key, onRelease);
    }

    /** Force-releases notify whether or not anyone watches: listening is enough. */
    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        awaitListening(FORCE_RELEASES);
        return forceReleases.subscribe(FORCE_RELEASES, onForceRelease);
    }

    /** Upserts this store's watch of {@code keys}, living {@link #WATCH_TTL} from now. */
    private void watch(Connection connection, List<String> keys) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(PostgresDialect.WATCH)) {
            statement.setString(1, watchOwner);
            statement.setLong(2, WATCH_TTL.toMillis());
            statement.setString(3, wake);
            statement.setArray(4, connection.createArrayOf("varchar", keys.toArray()));
            statement.executeUpdate();
        }
    }

    /** Starts the listening thread if needed and returns once LISTEN is confirmed by the server. */
    private void awaitListening(String what) {
        lock.lock();
        try {
            startIfNeeded("leasehold-postgresql-listener");
            long deadline = System.nanoTime() + SUBSCRIBE_TIMEOUT.toNanos();
            while (!listening) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || closed) {
                    throw new LeaseStoreException(
                            "subscribe to releases",
                            what,
                            lastFailure != null
                                    ? lastFailure
                                    : new SQLException("LISTEN not confirmed within " + SUBSCRIBE_TIMEOUT));
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LeaseStoreException("subscribe to releases", what, e);
        } finally {
            lock.unlock();
        }
    }

    @Override
    protected void run() {
        long backOffMillis = 50;
        boolean reconnected = false;
        while (!closed) {
            Connection connection = null;
            try {
                connection = dataSource.getConnection();
                connection.setAutoCommit(true);
                try (Statement statement = connection.createStatement()) {
                    statement.execute("LISTEN " + PostgresDialect.CHANNEL);
                }
                PGConnection notifications = connection.unwrap(PGConnection.class);
                setListening(true, null);
                backOffMillis = 50;
                if (reconnected) {
                    // Releases while the connection was down were not seen: let every waiter look.
                    releases.keys().forEach(key -> releases.publish(new ReleaseNotice(key, 0, false)));
                }
                long refreshed = System.nanoTime() - REFRESH_NANOS;
                while (!closed) {
                    if (System.nanoTime() - refreshed >= REFRESH_NANOS) {
                        // Keep this store's watches alive while their keys have subscribers.
                        long start = System.nanoTime();
                        List<String> keys = List.copyOf(releases.keys());
                        if (!keys.isEmpty()) {
                            watch(connection, keys);
                            keys.forEach(key -> watchedUntil.put(key, start + LIVE_NANOS));
                        }
                        watchedUntil.values().removeIf(until -> until - start <= 0);
                        refreshed = start;
                    }
                    PGNotification[] received = notifications.getNotifications(WAIT_MILLIS);
                    if (received != null) {
                        for (PGNotification notification : received) {
                            dispatch(notification.getParameter());
                        }
                    }
                }
            } catch (SQLException | RuntimeException e) {
                SQLException failure = e instanceof SQLException sql ? sql : new SQLException(e);
                setListening(false, failure);
                if (!closed) {
                    log.warn("release notifications lost their connection; reconnecting in {} ms", backOffMillis, e);
                }
            } finally {
                close(connection);
            }
            if (closed) {
                break;
            }
            reconnected = true;
            pause(TimeUnit.MILLISECONDS.toNanos(backOffMillis));
            backOffMillis = Math.min(backOffMillis * 2, 2_000);
        }
        setListening(false, null);
    }

    /**
     * A payload {@code r:<fence>:<key>} or {@code f:<fence>:<key>}, or a hand-off {@code
     * h:<fence>:<store>:<key>}, passed on only by the store of the waiter it was handed to.
     */
    private void dispatch(String payload) {
        int second = payload == null ? -1 : payload.indexOf(':', 2);
        if (second < 0) {
            return;
        }
        if (payload.startsWith("h:")) {
            int third = payload.indexOf(':', second + 1);
            if (third < 0) {
                return;
            }
            boolean mine = third - second - 1 == wake.length() && payload.startsWith(wake, second + 1);
            if (!mine) {
                return; // handed to a waiter of another store
            }
            payload = "r:" + payload.substring(2, second) + payload.substring(third);
            second = payload.indexOf(':', 2);
        }
        boolean forced = payload.startsWith("f:");
        long fence;
        try {
            fence = Math.max(0, Long.parseLong(payload.substring(2, second)));
        } catch (NumberFormatException e) {
            fence = 0;
        }
        String key = payload.substring(second + 1);
        ReleaseNotice notice = new ReleaseNotice(key, fence, forced);
        releases.publish(notice);
        if (forced) {
            forceReleases.publish(FORCE_RELEASES, notice);
        }
    }

    private void setListening(boolean value, SQLException failure) {
        lock.lock();
        try {
            listening = value;
            lastFailure = failure;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private static void close(Connection connection) {
        if (connection == null) {
            return;
        }
        try {
            if (!connection.isClosed()) {
                try (Statement statement = connection.createStatement()) {
                    statement.execute("UNLISTEN *"); // a pooled connection goes back listening to nothing
                }
            }
        } catch (SQLException e) {
            log.debug("UNLISTEN failed on a broken connection", e);
        }
        try {
            connection.close();
        } catch (SQLException e) {
            log.debug("closing the listening connection failed", e);
        }
    }

    @Override
    public void close() {
        stop();
        releases.closeAll();
        forceReleases.closeAll();
    }
}
