package dev.leasehold.jdbc;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.spi.ReleaseFanOut;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
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

    private final DataSource dataSource;
    private final ReleaseFanOut releases = new ReleaseFanOut();
    private final ReleaseFanOut forceReleases = new ReleaseFanOut();
    private boolean listening; // guarded by lock
    private SQLException lastFailure; // guarded by lock

    private final String wake;

    PostgresReleaseListener(DataSource dataSource, String wake) {
        this.dataSource = dataSource;
        this.wake = wake;
    }

    @Override
    public ReleaseSubscription subscribe(String key, Consumer<ReleaseNotice> onRelease) {
        ReleaseSubscription subscription = releases.subscribe(key, onRelease);
        awaitListening(subscription, key);
        return subscription;
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        ReleaseSubscription subscription = forceReleases.subscribe(FORCE_RELEASES, onForceRelease);
        awaitListening(subscription, FORCE_RELEASES);
        return subscription;
    }

    /** Starts the listening thread if needed and returns once LISTEN is confirmed by the server. */
    private void awaitListening(ReleaseSubscription subscription, String what) {
        lock.lock();
        try {
            if (closed) {
                subscription.close();
            }
            startIfNeeded("leasehold-postgresql-listener");
            long deadline = System.nanoTime() + SUBSCRIBE_TIMEOUT.toNanos();
            while (!listening) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || closed) {
                    subscription.close();
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
            subscription.close();
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
                while (!closed) {
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
