package dev.leasehold.redis;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Assumptions;

/**
 * Starts real {@code redis-server} processes on loopback ports for topology tests (Cluster,
 * Sentinel). Where {@code redis-server} or {@code redis-cli} is not installed, the calling test is
 * skipped with a message saying so.
 */
final class LocalRedis implements AutoCloseable {

    private final List<Process> processes = new ArrayList<>();
    final Path dir;

    LocalRedis() throws IOException {
        requireInstalled("redis-server");
        this.dir = Files.createTempDirectory("leasehold-redis");
    }

    static void requireInstalled(String command) {
        try {
            Process process = new ProcessBuilder(command, "--version")
                    .redirectErrorStream(true)
                    .start();
            process.getInputStream().readAllBytes();
            Assumptions.assumeTrue(
                    process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0,
                    command + " --version failed; install Redis to run this topology test");
        } catch (IOException e) {
            Assumptions.abort(command + " is not installed; install Redis (redis-server, redis-cli) to run this"
                    + " topology test");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            Assumptions.abort("interrupted while looking for " + command);
        }
    }

    /** A port whose cluster bus port (+10000) is free too. */
    static int freePortPair() throws IOException {
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(20000, 29000);
            if (free(port) && free(port + 10000)) {
                return port;
            }
        }
        throw new IOException("no free port pair found");
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket(port)) {
            socket.setReuseAddress(true);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    Process server(int port, String... extra) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                "redis-server",
                "--port",
                String.valueOf(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                dir.toString(),
                "--dbfilename",
                "dump-" + port + ".rdb",
                "--logfile",
                "redis-" + port + ".log"));
        command.addAll(List.of(extra));
        return start(command, port);
    }

    Process sentinel(int port, int masterPort, String masterName) throws IOException, InterruptedException {
        return sentinel(port, masterPort, masterName, 1, Duration.ofSeconds(5));
    }

    /**
     * A sentinel monitoring {@code masterName}: the master is down for it after {@code downAfter}
     * without an answer, and {@code quorum} sentinels must agree before a failover (which may take
     * 5 s before it is tried again).
     */
    Process sentinel(int port, int masterPort, String masterName, int quorum, Duration downAfter)
            throws IOException, InterruptedException {
        Path config = dir.resolve("sentinel-" + port + ".conf");
        Files.writeString(
                config,
                String.join(
                        "\n",
                        "port " + port,
                        "bind 127.0.0.1",
                        "dir " + dir,
                        "logfile sentinel-" + port + ".log",
                        "sentinel monitor " + masterName + " 127.0.0.1 " + masterPort + " " + quorum,
                        "sentinel down-after-milliseconds " + masterName + " " + downAfter.toMillis(),
                        "sentinel failover-timeout " + masterName + " 5000",
                        ""),
                StandardCharsets.UTF_8);
        return start(List.of("redis-server", config.toString(), "--sentinel"), port);
    }

    private Process start(List<String> command, int port) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("out-" + port + ".txt").toFile())
                .start();
        processes.add(process);
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (System.nanoTime() < deadline) {
            if (answers(port)) {
                return process;
            }
            if (!process.isAlive()) {
                throw new IOException("redis-server on port " + port + " exited: " + command);
            }
            Thread.sleep(50);
        }
        throw new IOException("redis-server on port " + port + " did not answer within 15 s");
    }

    static boolean answers(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
            socket.setSoTimeout(500);
            socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] reply = socket.getInputStream().readNBytes(5);
            return new String(reply, StandardCharsets.US_ASCII).equals("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    /** Runs redis-cli with the arguments; fails if it does not exit 0. */
    String cli(String... args) throws IOException, InterruptedException {
        requireInstalled("redis-cli");
        List<String> command = new ArrayList<>();
        command.add("redis-cli");
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException("redis-cli " + String.join(" ", args) + " failed: " + output);
        }
        return output;
    }

    /** A client of the server on {@code port}, with a 2 s command timeout; the caller shuts it down. */
    static io.lettuce.core.RedisClient client(int port) {
        return io.lettuce.core.RedisClient.create(io.lettuce.core.RedisURI.builder()
                .withHost("127.0.0.1")
                .withPort(port)
                .withTimeout(Duration.ofSeconds(2))
                .build());
    }

    /** Sends {@code signal} (such as {@code STOP}, {@code CONT}) to a process with {@code kill}. */
    static void signal(Process process, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid()))
                .redirectErrorStream(true)
                .start();
        String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + signal + " " + process.pid() + " failed: " + output);
        }
    }

    /** Kills a server with {@code SIGKILL} (no save, no AOF flush) and waits until it is gone. */
    static void crash(Process process) throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("redis-server " + process.pid() + " survived SIGKILL for 10 s");
        }
    }

    /**
     * Waits for a topology change; when it does not happen in time, the failure carries the tail of
     * every server and sentinel log of this test, so a slow or broken failover can be read from the
     * test report alone.
     */
    void await(String what, Duration atMost, Callable<Boolean> condition) {
        try {
            Awaitility.await(what)
                    .atMost(atMost)
                    .pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions()
                    .until(condition);
        } catch (ConditionTimeoutException e) {
            throw new AssertionError(what + " did not happen within " + atMost + "\n" + logs(), e);
        }
    }

    /** The last lines of each log file the servers of this test wrote. */
    String logs() {
        StringBuilder text = new StringBuilder();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".log"))
                    .sorted()
                    .toList()) {
                List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
                text.append("--- ").append(file.getFileName()).append('\n');
                lines.subList(Math.max(0, lines.size() - 25), lines.size())
                        .forEach(line -> text.append(line).append('\n'));
            }
        } catch (IOException e) {
            text.append("(logs could not be read: ").append(e).append(")\n");
        }
        return text.toString();
    }

    @Override
    public void close() {
        for (Process process : processes) {
            process.destroy();
        }
        for (Process process : processes) {
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
