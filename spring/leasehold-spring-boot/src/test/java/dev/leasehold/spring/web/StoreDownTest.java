package dev.leasehold.spring.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.actuator.LeaseStoreHealthIndicator;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A Redis that stops answering (SIGSTOP on a server of the test's own): the health indicator says
 * DOWN within its timeout and callers fail within the command timeout, instead of hanging for
 * Lettuce's default minute. Latency is the guarantee here, so it is asserted, with generous bounds.
 */
class StoreDownTest {

    private Process redis;
    private int port;

    @BeforeEach
    void startRedis() throws Exception {
        Path server = Path.of("/usr/bin/redis-server");
        Assumptions.assumeTrue(Files.isExecutable(server), "redis-server is not installed at " + server);
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        redis = new ProcessBuilder(
                        server.toString(),
                        "--port",
                        String.valueOf(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        await().atMost(Duration.ofSeconds(10)).until(() -> answers(port));
    }

    @AfterEach
    void stopRedis() throws Exception {
        signal("CONT");
        redis.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    private static boolean answers(int port) {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            return socket.isConnected();
        } catch (IOException e) {
            return false;
        }
    }

    private void signal(String name) throws Exception {
        new ProcessBuilder("kill", "-" + name, String.valueOf(redis.pid()))
                .inheritIO()
                .start()
                .waitFor();
    }

    @Test
    void aHungStoreIsDownWithinTheHealthTimeoutAndCallersFailFast() throws Exception {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)))
                .withPropertyValues(
                        "leasehold.backend=redis",
                        "leasehold.redis.url=redis://127.0.0.1:" + port,
                        "leasehold.redis.command-timeout=500ms",
                        "leasehold.health.timeout=1s",
                        "leasehold.stale-scan.enabled=false")
                .run(context -> {
                    LeaseStoreHealthIndicator health = context.getBean(LeaseStoreHealthIndicator.class);
                    assertThat(health.health().getStatus()).isEqualTo(Status.UP);
                    LockService locks = context.getBean(LockService.class);

                    signal("STOP");
                    long started = System.nanoTime();
                    Health down = health.health();
                    long healthMs = (System.nanoTime() - started) / 1_000_000;
                    assertThat(down.getStatus()).isEqualTo(Status.DOWN);
                    assertThat(healthMs)
                            .as("health answered in %d ms", healthMs)
                            .isLessThan(4_000);

                    started = System.nanoTime();
                    CompletableFuture<Throwable> caller = CompletableFuture.supplyAsync(() -> {
                        try {
                            locks.tryAcquire(LockKey.of("down", "1"), LeaseOptions.defaults());
                            return null;
                        } catch (RuntimeException e) {
                            return e;
                        }
                    });
                    Throwable failure = caller.get(20, TimeUnit.SECONDS);
                    long callerMs = (System.nanoTime() - started) / 1_000_000;
                    assertThat(failure).isInstanceOf(LeaseStoreException.class);
                    assertThat(callerMs)
                            .as("the caller failed after %d ms", callerMs)
                            .isLessThan(5_000);

                    signal("CONT");
                    await().atMost(Duration.ofSeconds(10))
                            .until(() -> health.health().getStatus().equals(Status.UP));
                });
    }
}
