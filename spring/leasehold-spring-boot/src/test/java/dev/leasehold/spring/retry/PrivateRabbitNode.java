package dev.leasehold.spring.retry;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A RabbitMQ node of the test's own, on free loopback ports, with its own node name, data and
 * configuration, so it can be killed and restarted without touching the shared broker. Runs the
 * installed {@code rabbitmq-server}; the test is skipped, naming why, when it is missing.
 */
final class PrivateRabbitNode implements AutoCloseable {

    private static final Path SERVER = Path.of("/usr/sbin/rabbitmq-server");

    private final Path base;
    private final String node;
    private final int port;
    private final int distPort;
    private Process process;

    private PrivateRabbitNode(Path base, String node, int port, int distPort) {
        this.base = base;
        this.node = node;
        this.port = port;
        this.distPort = distPort;
    }

    /** Starts a fresh node, or skips the calling test. */
    static PrivateRabbitNode start() throws IOException, InterruptedException {
        if (!Files.isExecutable(SERVER) || !Files.isDirectory(Path.of("/usr/lib/rabbitmq"))) {
            Assumptions.abort("RabbitMQ restart test: " + SERVER + " is not installed");
        }
        Path base = Files.createTempDirectory("leasehold-rabbit-");
        PrivateRabbitNode node = new PrivateRabbitNode(
                base, "lh" + UUID.randomUUID().toString().substring(0, 8) + "@localhost", freePort(), freePort());
        Files.createDirectories(base.resolve("mnesia"));
        Files.createDirectories(base.resolve("log"));
        Files.writeString(base.resolve("rabbitmq.conf"), "listeners.tcp.local = 127.0.0.1:" + node.port + "\n");
        Files.writeString(base.resolve("env.conf"), "\n");
        Files.writeString(base.resolve("enabled_plugins"), "[].\n");
        // The server script runs the node as the rabbitmq user when started as root.
        if ("root".equals(System.getProperty("user.name"))) {
            new ProcessBuilder("chown", "-R", "rabbitmq:rabbitmq", base.toString())
                    .inheritIO()
                    .start()
                    .waitFor();
        }
        node.boot();
        return node;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    int port() {
        return port;
    }

    private void boot() throws IOException {
        ProcessBuilder builder = new ProcessBuilder(SERVER.toString());
        Map<String, String> env = builder.environment();
        env.put("RABBITMQ_NODENAME", node);
        env.put("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1");
        env.put("RABBITMQ_NODE_PORT", String.valueOf(port));
        env.put("RABBITMQ_DIST_PORT", String.valueOf(distPort));
        env.put("RABBITMQ_MNESIA_BASE", base.resolve("mnesia").toString());
        env.put("RABBITMQ_LOG_BASE", base.resolve("log").toString());
        env.put("RABBITMQ_CONFIG_FILE", base.resolve("rabbitmq.conf").toString());
        env.put("RABBITMQ_CONF_ENV_FILE", base.resolve("env.conf").toString());
        env.put("RABBITMQ_ENABLED_PLUGINS_FILE", base.resolve("enabled_plugins").toString());
        env.put("RABBITMQ_PID_FILE", base.resolve("node.pid").toString());
        env.put("ERL_EPMD_ADDRESS", "127.0.0.1");
        env.put("ERL_FLAGS", "-kernel inet_dist_use_interface {127,0,0,1}");
        builder.redirectErrorStream(true);
        builder.redirectOutput(
                ProcessBuilder.Redirect.appendTo(base.resolve("server.out").toFile()));
        process = builder.start();
        Instant deadline = Instant.now().plus(Duration.ofSeconds(90));
        while (!TestRabbit.answers("127.0.0.1", port)) {
            if (!process.isAlive() || Instant.now().isAfter(deadline)) {
                String out =
                        Files.exists(base.resolve("server.out")) ? Files.readString(base.resolve("server.out")) : "";
                kill();
                Assumptions.abort("RabbitMQ restart test: the private node did not start: "
                        + out.substring(Math.max(0, out.length() - 800)));
            }
            pause();
        }
    }

    /** Kills the node at once (SIGKILL): no clean shutdown, as in a crash. */
    void kill() throws IOException {
        Path pidFile = base.resolve("node.pid");
        if (Files.exists(pidFile)) {
            String pid = Files.readString(pidFile).trim();
            if (!pid.isEmpty()) {
                try {
                    new ProcessBuilder("kill", "-9", pid).inheritIO().start().waitFor();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        if (process != null) {
            process.destroyForcibly();
            Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
            while (TestRabbit.answers("127.0.0.1", port) && Instant.now().isBefore(deadline)) {
                pause();
            }
        }
    }

    /** Kills the node and starts it again on the same data. */
    void restart() throws IOException {
        kill();
        boot();
    }

    private static void pause() {
        try {
            // Waiting for a server process to open or close its port: nothing to wait on but the socket.
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() throws IOException {
        kill();
        try (Stream<Path> files = Files.walk(base)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
