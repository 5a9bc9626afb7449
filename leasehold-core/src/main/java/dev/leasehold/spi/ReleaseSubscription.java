package dev.leasehold.spi;

/**
 * A subscription to release notifications of one key, returned by {@link LeaseStore#subscribe}.
 * Closing it stops the notifications; closing twice does nothing.
 */
public interface ReleaseSubscription extends AutoCloseable {

    @Override
    void close();
}
