package dev.leasehold.jdbc;

import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.util.function.Consumer;

/** Where a store's release notifications come from: LISTEN on PostgreSQL, polling elsewhere. */
interface ReleaseFeed extends AutoCloseable {

    ReleaseSubscription subscribe(String key, Consumer<ReleaseNotice> onRelease);

    ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease);

    @Override
    void close();
}
