package dev.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ReleaseFanOutTest {

    private static final String KEY = "ns:k";

    /** A server that records its subscriptions and fails the test on an open or close out of order. */
    private static class RecordingServer implements ReleaseFanOut.Server {
        final Set<String> subscribed = ConcurrentHashMap.newKeySet();
        final List<String> calls = new CopyOnWriteArrayList<>();
        final List<String> violations = new CopyOnWriteArrayList<>();
        final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();

        @Override
        public void open(String key) {
            enter(key);
            calls.add("open " + key);
            if (!subscribed.add(key)) {
                violations.add("opened twice: " + key);
            }
            beforeLeaving("open", key);
            leave(key);
        }

        @Override
        public void close(String key) {
            enter(key);
            calls.add("close " + key);
            if (!subscribed.remove(key)) {
                violations.add("closed while not open: " + key);
            }
            beforeLeaving("close", key);
            leave(key);
        }

        void beforeLeaving(String what, String key) {}

        private void enter(String key) {
            if (inFlight.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() != 1) {
                violations.add("open and close overlap: " + key);
            }
        }

        private void leave(String key) {
            inFlight.get(key).decrementAndGet();
        }
    }

    @Test
    void aKeyIsOpenedAtTheServerOnceForAllItsListenersAndClosedAfterTheLast() {
        RecordingServer server = new RecordingServer();
        ReleaseFanOut fanOut = new ReleaseFanOut(server);

        ReleaseSubscription first = fanOut.subscribe(KEY, n -> {});
        ReleaseSubscription second = fanOut.subscribe(KEY, n -> {});
        first.close();
        assertThat(server.subscribed).containsExactly(KEY);
        second.close();
        second.close();

        assertThat(server.calls).containsExactly("open " + KEY, "close " + KEY);
        assertThat(fanOut.hasListeners(KEY)).isFalse();
        assertThat(fanOut.isEmpty()).isTrue();
    }

    @Test
    void aNoticeReachesEveryListenerOfItsKeyAndNoOther() {
        ReleaseFanOut fanOut = new ReleaseFanOut();
        List<String> seen = new ArrayList<>();
        fanOut.subscribe(KEY, n -> seen.add("a" + n.fence()));
        fanOut.subscribe(KEY, n -> seen.add("b" + n.fence()));
        fanOut.subscribe("ns:other", n -> seen.add("other" + n.fence()));

        fanOut.publish(new ReleaseNotice(KEY, 7, false));

        assertThat(seen).containsExactly("a7", "b7");
    }

    @Test
    void aListenerThatThrowsDoesNotKeepTheNextFromItsNotice() {
        ReleaseFanOut fanOut = new ReleaseFanOut();
        List<Long> seen = new ArrayList<>();
        fanOut.subscribe(KEY, n -> {
            throw new IllegalStateException("listener failure");
        });
        fanOut.subscribe(KEY, n -> seen.add(n.fence()));

        fanOut.publish(KEY, new ReleaseNotice(KEY, 3, true));

        assertThat(seen).containsExactly(3L);
    }

    @Test
    void aClosedListenerHearsNothingMore() {
        ReleaseFanOut fanOut = new ReleaseFanOut();
        List<Long> seen = new ArrayList<>();
        ReleaseSubscription subscription = fanOut.subscribe(KEY, n -> seen.add(n.fence()));
        subscription.close();

        fanOut.publish(new ReleaseNotice(KEY, 1, false));

        assertThat(seen).isEmpty();
    }

    @Test
    void aRefusedOpenReachesTheSubscriberAndLeavesNoListener() {
        AtomicInteger opens = new AtomicInteger();
        ReleaseFanOut fanOut = new ReleaseFanOut(new ReleaseFanOut.Server() {
            @Override
            public void open(String key) {
                if (opens.incrementAndGet() == 1) {
                    throw new IllegalStateException("server refused");
                }
            }

            @Override
            public void close(String key) {}
        });

        assertThatThrownBy(() -> fanOut.subscribe(KEY, n -> {})).hasMessage("server refused");
        assertThat(fanOut.hasListeners(KEY)).isFalse();
        assertThat(fanOut.isEmpty()).isTrue();

        fanOut.subscribe(KEY, n -> {});
        assertThat(opens).hasValue(2);
        assertThat(fanOut.hasListeners(KEY)).isTrue();
    }

    @Test
    void closeAllClosesEveryKeyAtTheServer() {
        RecordingServer server = new RecordingServer();
        ReleaseFanOut fanOut = new ReleaseFanOut(server);
        fanOut.subscribe("ns:a", n -> {});
        fanOut.subscribe("ns:a", n -> {});
        fanOut.subscribe("ns:b", n -> {});

        fanOut.closeAll();

        assertThat(server.subscribed).isEmpty();
        assertThat(server.violations).isEmpty();
        assertThat(fanOut.isEmpty()).isTrue();
    }

    /**
     * The last listener leaves and a new one arrives while the server is still closing the key: the
     * new listener's open waits for that close, so the server ends subscribed with a listener here.
     */
    @Test
    void aSubscribeRacingTheLastCloseOpensTheKeyAgainAfterTheClose() throws Exception {
        CountDownLatch closing = new CountDownLatch(1);
        CountDownLatch finishClose = new CountDownLatch(1);
        RecordingServer server = new RecordingServer() {
            @Override
            void beforeLeaving(String what, String key) {
                if (what.equals("close")) {
                    closing.countDown();
                    awaitQuietly(finishClose);
                }
            }
        };
        ReleaseFanOut fanOut = new ReleaseFanOut(server);
        ReleaseSubscription last = fanOut.subscribe(KEY, n -> {});

        Thread closer = new Thread(last::close);
        closer.start();
        assertThat(closing.await(10, TimeUnit.SECONDS)).isTrue();
        List<Long> heard = new CopyOnWriteArrayList<>();
        Thread subscriber = new Thread(() -> fanOut.subscribe(KEY, n -> heard.add(n.fence())));
        subscriber.start();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> subscriber.getState() == Thread.State.WAITING
                        || subscriber.getState() == Thread.State.TIMED_WAITING);
        assertThat(server.calls).containsExactly("open " + KEY, "close " + KEY); // no open yet

        finishClose.countDown();
        closer.join(10_000);
        subscriber.join(10_000);

        assertThat(server.calls).containsExactly("open " + KEY, "close " + KEY, "open " + KEY);
        assertThat(server.subscribed).containsExactly(KEY);
        assertThat(server.violations).isEmpty();
        fanOut.publish(new ReleaseNotice(KEY, 9, false));
        assertThat(heard).containsExactly(9L);
    }

    /**
     * Subscribes and closes on a few keys from several threads at once; after every round the
     * server is subscribed to exactly the keys that have a listener here, and no key was ever
     * opened twice, closed while closed, or opened and closed at the same time.
     */
    @Test
    void underConcurrentSubscribesAndClosesTheServerMatchesTheLocalListeners() throws Exception {
        RecordingServer server = new RecordingServer() {
            @Override
            void beforeLeaving(String what, String key) {
                Thread.yield(); // widens the window between a key's state change and its lock release
            }
        };
        ReleaseFanOut fanOut = new ReleaseFanOut(server);
        String[] keys = {"ns:a", "ns:b"};
        int threads = 4;
        for (int round = 0; round < 200; round++) {
            CyclicBarrier start = new CyclicBarrier(threads);
            List<ReleaseSubscription> kept = new CopyOnWriteArrayList<>();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Thread worker = new Thread(() -> {
                    awaitQuietly(start);
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    for (int i = 0; i < 20; i++) {
                        ReleaseSubscription s = fanOut.subscribe(keys[random.nextInt(keys.length)], n -> {});
                        if (random.nextInt(4) == 0) {
                            kept.add(s);
                        } else {
                            s.close();
                        }
                    }
                });
                workers.add(worker);
                worker.start();
            }
            for (Thread worker : workers) {
                worker.join(30_000);
            }
            for (String key : keys) {
                assertThat(server.subscribed.contains(key))
                        .as("round %d, key %s subscribed at the server", round, key)
                        .isEqualTo(fanOut.hasListeners(key));
            }
            kept.forEach(ReleaseSubscription::close);
            assertThat(server.subscribed).isEmpty();
        }
        assertThat(server.violations).isEmpty();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void awaitQuietly(CyclicBarrier barrier) {
        try {
            barrier.await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
