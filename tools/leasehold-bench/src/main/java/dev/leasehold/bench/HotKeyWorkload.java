package dev.leasehold.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * What one "process" does in the multi-process scenario: {@code threads} threads take the same key
 * again and again, hold it for the critical section, give it back, until the end time. Every grant
 * is recorded with wall-clock micros (comparable between JVMs on one machine), so grants from all
 * processes can be merged into one history.
 */
final class HotKeyWorkload {

    /** One grant: who, when it was held (taken just after the grant, just before the release), and the wait. */
    record GrantRecord(int process, int thread, long acquiredMicros, long releasedMicros, long waitNanos) {

        String line() {
            return "G " + process + " " + thread + " " + acquiredMicros + " " + releasedMicros + " " + waitNanos;
        }

        static GrantRecord parse(String line) {
            String[] f = line.split(" ");
            return new GrantRecord(
                    Integer.parseInt(f[1]),
                    Integer.parseInt(f[2]),
                    Long.parseLong(f[3]),
                    Long.parseLong(f[4]),
                    Long.parseLong(f[5]));
        }
    }

    private HotKeyWorkload() {}

    static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }

    /** Sleeps until the wall clock reaches {@code micros}. */
    static void sleepUntil(long micros) throws InterruptedException {
        long left;
        while ((left = micros - nowMicros()) > 0) {
            Thread.sleep(Math.max(0, Math.min(left / 1000, 50)), (int) Math.min(999_999, (left % 1000) * 1000));
        }
    }

    /** The critical section: holds for {@code nanos} without spinning a core. */
    static void hold(long nanos) {
        long until = System.nanoTime() + nanos;
        long left;
        while ((left = until - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    /**
     * Runs one process's threads from {@code startMicros} until {@code endMicros} and returns every
     * grant they had. A thread that is waiting at the end finishes its wait (and its hold) first.
     */
    static List<GrantRecord> run(
            Contender contender, int process, int threads, String key, long holdNanos, long startMicros, long endMicros)
            throws Exception {
        List<List<GrantRecord>> perThread = new ArrayList<>();
        CountDownLatch done = new CountDownLatch(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            List<GrantRecord> mine = new ArrayList<>();
            perThread.add(mine);
            int thread = t;
            Thread worker = new Thread(
                    () -> {
                        try {
                            sleepUntil(startMicros);
                            while (nowMicros() < endMicros) {
                                long asked = System.nanoTime();
                                Contender.Held held = contender.lock(key, Duration.ofSeconds(30));
                                if (held == null) {
                                    continue;
                                }
                                long waited = System.nanoTime() - asked;
                                long acquired = nowMicros();
                                hold(holdNanos);
                                long released = nowMicros();
                                held.unlock();
                                mine.add(new GrantRecord(process, thread, acquired, released, waited));
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        } finally {
                            done.countDown();
                        }
                    },
                    "hot-key-p" + process + "-t" + t);
            worker.setDaemon(true);
            started.add(worker);
            worker.start();
        }
        done.await();
        for (Thread worker : started) {
            worker.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException(
                    contender.name() + " process " + process + " failed: " + failure.get(), failure.get());
        }
        List<GrantRecord> all = new ArrayList<>();
        perThread.forEach(all::addAll);
        return all;
    }
}
