package dev.leasehold.memory;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.Ticker;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.OwnerTokens;
import dev.leasehold.spi.ReleaseFanOut;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * A {@link LeaseStore} inside one JVM: the reference behaviour of the SPI, used by unit tests and by
 * single-process applications. Each operation is one atomic {@link ConcurrentHashMap#compute}.
 *
 * <p>Its clock is its own {@link Ticker} (expiry) and {@link Clock} (reported expiry instants), so
 * tests can move store time independently of the engine's. Fences come from one counter shared by
 * all keys, which makes them strictly increasing per key without keeping a counter for every key
 * ever locked. Releases are pushed to subscribers
 * through a {@link ReleaseFanOut}; a subscriber that throws is logged. Thread-safe.
 */
public final class InMemoryLeaseStore implements LeaseStore {

    private final Ticker ticker;
    private final Clock clock;
    private final AtomicLong fences = new AtomicLong();
    private final ConcurrentHashMap<String, Entry> leases = new ConcurrentHashMap<>();
    private final ReleaseFanOut releases = new ReleaseFanOut();
    private final ReleaseFanOut forceReleases = new ReleaseFanOut();

    private static final String FORCE_RELEASES = "";

    private record Entry(String owner, long fence, long expiresAtNanos) {}

    /** A store on the system clocks. */
    public InMemoryLeaseStore() {
        this(Ticker.system(), Clock.systemUTC());
    }

    /** A store whose expiry is decided by {@code ticker}; {@code clock} only dates the reports. */
    public InMemoryLeaseStore(Ticker ticker, Clock clock) {
        this.ticker = Objects.requireNonNull(ticker, "ticker is missing (null)");
        this.clock = Objects.requireNonNull(clock, "clock is missing (null)");
    }

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        checkKeyAndOwner(key, owner);
        long leaseNanos = positive(leaseFor);
        AtomicReference<AcquireResult> result = new AtomicReference<>();
        leases.compute(key.render(), (k, current) -> {
            long now = ticker.nanos();
            if (current == null || expired(current, now)) {
                Entry granted = new Entry(owner, fences.incrementAndGet(), now + leaseNanos);
                result.set(new AcquireResult.Granted(grant(granted, now)));
                return granted;
            }
            if (current.owner().equals(owner)) {
                Entry extended = new Entry(owner, current.fence(), now + leaseNanos);
                result.set(new AcquireResult.Granted(grant(extended, now)));
                return extended;
            }
            result.set(new AcquireResult.Busy(Duration.ofNanos(current.expiresAtNanos() - now)));
            return current;
        });
        return result.get();
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkKeyAndOwner(key, owner);
        long leaseNanos = positive(leaseFor);
        AtomicReference<Grant> result = new AtomicReference<>();
        leases.computeIfPresent(key.render(), (k, current) -> {
            long now = ticker.nanos();
            if (expired(current, now)) {
                return null;
            }
            if (!current.owner().equals(owner)) {
                return current;
            }
            Entry extended = new Entry(owner, current.fence(), now + leaseNanos);
            result.set(grant(extended, now));
            return extended;
        });
        return Optional.ofNullable(result.get());
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkKeyAndOwner(key, owner);
        long[] released = new long[1];
        leases.computeIfPresent(key.render(), (k, current) -> {
            if (expired(current, ticker.nanos())) {
                return null;
            }
            if (!current.owner().equals(owner)) {
                return current;
            }
            released[0] = current.fence();
            return null;
        });
        if (released[0] != 0) {
            releases.publish(new ReleaseNotice(key.render(), released[0], false));
        }
        return released[0] != 0;
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        Entry entry = leases.get(key.render());
        long now = ticker.nanos();
        if (entry == null || expired(entry, now)) {
            return Optional.empty();
        }
        Grant grant = grant(entry, now);
        return Optional.of(new LeaseInfo(key, entry.owner(), entry.fence(), grant.remaining(), grant.expiresAt()));
    }

    @Override
    public java.util.List<LeaseInfo> list(String namespace, int limit) {
        String prefix = Objects.requireNonNull(namespace, "namespace is missing (null)") + ":";
        java.util.List<LeaseInfo> found = new java.util.ArrayList<>();
        for (String rendered : new java.util.TreeSet<>(leases.keySet())) {
            if (found.size() >= limit) {
                break;
            }
            if (rendered.startsWith(prefix)) {
                inspect(LockKey.parse(rendered)).ifPresent(found::add);
            }
        }
        return found;
    }

    @Override
    public boolean forceRelease(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        Entry removed = leases.remove(key.render());
        boolean live = removed != null && !expired(removed, ticker.nanos());
        ReleaseNotice notice = new ReleaseNotice(key.render(), live ? removed.fence() : 0, true);
        releases.publish(notice);
        forceReleases.publish(FORCE_RELEASES, notice);
        return live;
    }

    @Override
    public boolean supportsReleaseNotifications() {
        return true;
    }

    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        Objects.requireNonNull(key, "key is missing (null)");
        return releases.subscribe(key.render(), onRelease);
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        return forceReleases.subscribe(FORCE_RELEASES, onForceRelease);
    }

    @Override
    public String name() {
        return "memory";
    }

    private Grant grant(Entry entry, long now) {
        Duration remaining = Duration.ofNanos(entry.expiresAtNanos() - now);
        return new Grant(entry.fence(), remaining, clock.instant().plus(remaining));
    }

    private static boolean expired(Entry entry, long now) {
        return entry.expiresAtNanos() - now <= 0;
    }

    private static void checkKeyAndOwner(LockKey key, String owner) {
        Objects.requireNonNull(key, "key is missing (null)");
        OwnerTokens.check(owner);
    }

    private static long positive(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.isNegative() || leaseFor.isZero()) {
            throw new IllegalArgumentException("leaseFor must be > 0, was " + leaseFor);
        }
        return leaseFor.toNanos();
    }
}
