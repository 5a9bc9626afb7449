package dev.leasehold;

/** The system's monotonic clock, as one instance: the engine recognises it (real time, not a test's). */
enum SystemTicker implements Ticker {
    INSTANCE;

    @Override
    public long nanos() {
        return System.nanoTime();
    }
}
