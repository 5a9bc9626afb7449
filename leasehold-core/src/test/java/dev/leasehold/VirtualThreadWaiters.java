package dev.leasehold;

import dev.leasehold.memory.InMemoryLeaseStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * Run by {@link VirtualThreadWaitersTest} in a JVM of release 21 or later with one carrier thread:
 * many virtual threads wait for one key while its holder, a virtual thread too, still has to run
 * to release it. Waiters that pinned the only carrier would stall it. Prints what it saw; exits 0
 * when every waiter got the key and no virtual thread was pinned.
 */
public final class VirtualThreadWaiters {

    private VirtualThreadWaiters() {}

    public static void main(String[] args) throws Exception {
        int waiters = Integer.parseInt(args.length > 0 ? args[0] : "200");
        int pinned = 0;
        int done;
        Path dump = Files.createTempFile("leasehold-vt", ".jfr");
        try (Recording jfr = new Recording()) {
            jfr.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            run(2); // loads the classes first: class loading may pin, and is not under test
            jfr.start();
            done = run(waiters);
            jfr.stop();
            jfr.dump(dump);
        }
        for (RecordedEvent event : RecordingFile.readAllEvents(dump)) {
            if (event.getEventType().getName().equals("jdk.VirtualThreadPinned")) {
                // Only pinning inside the engine counts (the JDK's own class loading may pin too).
                boolean inEngine = event.getStackTrace() != null
                        && event.getStackTrace().getFrames().stream()
                                .map(f -> f.getMethod().getType().getName())
                                .anyMatch(type -> type.startsWith("dev.leasehold.")
                                        && !type.startsWith(VirtualThreadWaiters.class.getName()));
                System.out.println(
                        (inEngine ? "pinned in the engine: " : "pinned outside the engine: ") + event.getStackTrace());
                if (inEngine) {
                    pinned++;
                }
            }
        }
        Files.deleteIfExists(dump);
        System.out.println("waiters=" + waiters + " done=" + done + " pinned=" + pinned);
        System.exit(done == waiters && pinned == 0 ? 0 : 1);
    }

    private static int run(int waiters) throws Exception {
        AtomicInteger waiting = new AtomicInteger();
        LockKey key = LockKey.of("vt", "one");
        ExecutorService virtual = (ExecutorService)
                Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        try (LockService locks = LockService.builder(new InMemoryLeaseStore())
                .listener(e -> {
                    if (e.type() == LeaseEventType.WAITING) {
                        waiting.incrementAndGet();
                    }
                })
                .build()) {
            CountDownLatch everyoneWaits = new CountDownLatch(1);
            CountDownLatch held = new CountDownLatch(1);
            Future<?> holder = virtual.submit(() -> {
                try (Lease lease = locks.acquire(key, LeaseOptions.defaults())) {
                    held.countDown();
                    everyoneWaits.await();
                    return lease.fence();
                }
            });
            // The holder first: once waiters queue, a fair service refuses a newcomer that does not wait.
            if (!held.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the holder did not get the key");
            }
            LeaseOptions wait = LeaseOptions.defaults().withWait(Duration.ofSeconds(60));
            List<Future<Long>> results = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                results.add(virtual.submit(() -> {
                    try (Lease lease = locks.acquire(key, wait)) {
                        return lease.fence();
                    }
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (waiting.get() < waiters && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            System.out.println("waiting=" + waiting.get());
            everyoneWaits.countDown();
            holder.get(30, TimeUnit.SECONDS);
            int done = 0;
            for (Future<Long> result : results) {
                result.get(30, TimeUnit.SECONDS);
                done++;
            }
            return done;
        } finally {
            virtual.shutdownNow();
        }
    }
}
