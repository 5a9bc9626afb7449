package dev.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TcpProxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario 9's holder case on PostgreSQL, many times and with more on the same store: a holder
 * whose link is black-holed both ways is told {@code onLost} by its last confirmation + lease +
 * {@link #MARGIN}, whatever else its store is doing at the cut: a renewal in flight, a second lease
 * renewed in the same batches, a waiter (and so the release listener's connection) on the same
 * pool of two connections. A loss signalled only when a blocked store call gives up (the driver's
 * socket timeout, 3 s, or the store's call timeout) is seconds late and fails the round.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class BlackholedHolderTest {

    private static final Pattern HOST_PORT = Pattern.compile("//([^/:?]+):(\\d+)");
    private static final Duration LEASE = Duration.ofSeconds(1);
    private static final Duration MARGIN = Duration.ofMillis(300);
    private static final int ROUNDS = 12;

    @Test
    void aBlackHoledHolderIsToldItLostByItsLeasesEndWhateverElseItsStoreIsDoing() throws Exception {
        ExecutorService workers = Executors.newCachedThreadPool();
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL)) {
            Matcher server = HOST_PORT.matcher(db.spec().url());
            assertThat(server.find()).as("host and port in %s", db.spec().url()).isTrue();
            try (TcpProxy proxy = TcpProxy.to(server.group(1), Integer.parseInt(server.group(2)));
                    HikariDataSource pool = farPool(db.spec(), proxy)) {
                Library.Store far = Library.jdbcStore(pool, Database.POSTGRESQL);
                Confirmations confirmations = new Confirmations();
                Set<String> waiting = ConcurrentHashMap.newKeySet();
                List<String> late = new ArrayList<>();
                List<String> rounds = new ArrayList<>();
                try (LockService a = Library.locks(far.store(), confirmations::record, event -> {
                    if (event.type() == LeaseEventType.WAITING) {
                        waiting.add(event.key().render());
                    }
                })) {
                    for (int round = 0; round < ROUNDS; round++) {
                        String line = round(round, a, far, db, proxy, pool, confirmations, waiting, workers);
                        rounds.add(line);
                        if (line.startsWith("late")) {
                            late.add(line);
                        }
                    }
                }
                System.out.println("[blackholed holder] " + rounds);
                assertThat(late)
                        .as(
                                "rounds whose onLost came after the last confirmation + %d ms; all rounds: %s",
                                LEASE.plus(MARGIN).toMillis(), rounds)
                        .isEmpty();
            }
        } finally {
            workers.shutdownNow();
        }
    }

    /** A's pool through the proxy, set up as scenario 9's (driver socket timeout 3 s), of two connections. */
    private static HikariDataSource farPool(PrivateDatabase.Spec spec, TcpProxy proxy) {
        String url = HOST_PORT.matcher(spec.url()).replaceFirst("//" + proxy.host() + ":" + proxy.port());
        url += (url.contains("?") ? "&" : "?") + "socketTimeout=3";
        return new PrivateDatabase.Spec(spec.database(), url, spec.user(), spec.password(), spec.name())
                .pool("faults-blackholed-holder", 2);
    }

    /** One round: what else runs at the cut depends on the round; the outcome as a line. */
    private static String round(
            int round,
            LockService a,
            Library.Store far,
            PrivateDatabase db,
            TcpProxy proxy,
            HikariDataSource pool,
            Confirmations confirmations,
            Set<String> waiting,
            ExecutorService workers)
            throws Exception {
        boolean inFlight = round % 2 == 1;
        boolean crowded = round % 4 >= 2;
        LockKey key = LockKey.of("blackholed", "held" + round);
        Lease held = a.acquire(key, options(LEASE, true), LockOwner.create("A"));
        CountDownLatch lost = new CountDownLatch(1);
        AtomicLong lostAt = new AtomicLong();
        held.onLost(e -> {
            lostAt.set(System.nanoTime());
            lost.countDown();
        });
        write(pool, key);
        Lease second = null;
        Future<?> waiter = null;
        if (crowded) {
            // A second lease renewed in the same batches, and a waiter on a key held elsewhere:
            // its subscription holds the release listener's connection, one of the pool's two.
            second = a.acquire(LockKey.of("blackholed", "second" + round), options(Duration.ofMillis(700), true));
            LockKey busy = LockKey.of("blackholed", "busy" + round);
            holdElsewhere(db, busy);
            waiter = workers.submit(() -> {
                try {
                    a.acquire(
                                    busy,
                                    LeaseOptions.builder()
                                            .leaseFor(LEASE)
                                            .waitFor(Duration.ofSeconds(3))
                                            .build())
                            .close();
                } catch (LockBusyException | dev.leasehold.LeaseStoreException e) {
                    // the key stays held elsewhere; the link is black-holed
                }
                return null;
            });
            Awaitility.await("A to wait for " + busy.render())
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> waiting.contains(busy.render()));
        }
        if (inFlight) {
            // The cut begins as a request leaves: the next renewal is sent and its answer lost.
            long before = proxy.forwardedBytes();
            Awaitility.await("a request through the proxy")
                    .atMost(Duration.ofSeconds(2))
                    .pollInterval(Duration.ofMillis(1))
                    .until(() -> proxy.forwardedBytes() > before);
        }
        proxy.blackhole(TcpProxy.Direction.BOTH);
        boolean told = lost.await(LEASE.toMillis() + 10_000, TimeUnit.MILLISECONDS);
        Long confirmed = confirmations.lastConfirmed(held);
        String what = "round " + round + (inFlight ? " (renewal in flight)" : "") + (crowded ? " (crowded)" : "");
        String line;
        if (!told || confirmed == null) {
            line = "late: " + what + " never told (isHeld() " + held.isHeld() + ")";
        } else {
            long after = TimeUnit.NANOSECONDS.toMillis(lostAt.get() - confirmed);
            line = (after > LEASE.plus(MARGIN).toMillis() ? "late: " : "") + what + " told " + after
                    + " ms after its last confirmation";
        }
        if (held.isHeld()) {
            line = "late: " + what + " isHeld() after onLost";
        }
        proxy.heal();
        Awaitility.await("A's store to answer again after the heal")
                .atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(20))
                .ignoreExceptions()
                .until(() ->
                        far.store().inspect(LockKey.of("blackholed", "link")).isEmpty());
        closeQuietly(held);
        closeQuietly(second);
        if (waiter != null) {
            waiter.get(30, TimeUnit.SECONDS);
        }
        return line;
    }

    private static LeaseOptions options(Duration lease, boolean renewal) {
        return LeaseOptions.builder()
                .leaseFor(lease)
                .waitFor(Duration.ofSeconds(5))
                .renewal(renewal)
                .build();
    }

    /** A write of A's through its pool before the cut, as the row's guarded write. */
    private static void write(HikariDataSource pool, LockKey key) throws Exception {
        try (Connection connection = pool.getConnection();
                PreparedStatement update =
                        connection.prepareStatement("UPDATE leasehold_lease SET holder = holder WHERE lock_key = ?")) {
            update.setString(1, key.render());
            update.executeUpdate();
        }
    }

    /** A row for {@code key} held by another owner for a day, written directly. */
    private static void holdElsewhere(PrivateDatabase db, LockKey key) throws Exception {
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement insert = connection.prepareStatement("INSERT INTO leasehold_lease"
                        + " (lock_key, owner_token, fence, expires_at_ms, acquired_at_ms, holder)"
                        + " VALUES (?, 'elsewhere', 1, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"
                        + " + 86400000, 0, 'elsewhere')")) {
            insert.setString(1, key.render());
            insert.executeUpdate();
        }
    }

    private static void closeQuietly(Lease lease) {
        if (lease == null) {
            return;
        }
        try {
            lease.close();
        } catch (RuntimeException e) {
            // lost, or the store answers late: the lease ends at its expiry
        }
    }
}
