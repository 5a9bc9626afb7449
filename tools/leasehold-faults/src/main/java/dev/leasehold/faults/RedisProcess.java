package dev.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * One {@code redis-server} (or sentinel) process of the suite's own, on a loopback port, with its
 * own directory for RDB and AOF files, so that it can be killed, paused, restarted and restored
 * without touching any shared server.
 */
final class RedisProcess implements AutoCloseable {

    static final String BINARY = "redis-server";

    private final int port;
    private final Path dir;
    private final List<String> options;
    private Process process;

    private RedisProcess(int port, Path dir, List<String> options) {
        this.port = port;
        this.dir = dir;
        this.options = options;
    }

    static boolean installed() {
        return Processes.installed(BINARY);
    }

    /**
     * A server without persistence unless {@code options} say otherwise (for example {@code
     * --appendonly yes}), started and answering.
     */
    static RedisProcess server(Path dir, String... options) throws IOException {
        int port = Processes.freePort();
        List<String> command = new ArrayList<>(List.of(
                BINARY,
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
                "--appenddirname",
                "aof-" + port,
                "--logfile",
                "redis-" + port + ".log"));
        command.addAll(List.of(options));
        RedisProcess redis = new RedisProcess(port, dir, command);
        redis.start();
        return redis;
    }

    /** A sentinel monitoring {@code masterName} at {@code masterPort}. */
    static RedisProcess sentinel(Path dir, int masterPort, String masterName, int quorum, Duration downAfter)
            throws IOException {
        int port = Processes.freePort();
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
        RedisProcess sentinel = new RedisProcess(port, dir, List.of(BINARY, config.toString(), "--sentinel"));
        sentinel.start();
        return sentinel;
    }

    int port() {
        return port;
    }

    String uri() {
        return "redis://127.0.0.1:" + port;
    }

    Path dir() {
        return dir;
    }

    Process process() {
        return process;
    }

    /** The RDB file this server saves to and loads from. */
    Path rdbFile() {
        return dir.resolve("dump-" + port + ".rdb");
    }

    /** The directory of this server's append-only files. */
    Path aofDir() {
        return dir.resolve("aof-" + port);
    }

    /** Starts the process with its options (again, after a kill), and waits until it answers. */
    void start() throws IOException {
        start(List.of());
    }

    /** As {@link #start()}, with extra options for this start only. */
    void start(List<String> extra) throws IOException {
        List<String> command = new ArrayList<>(options);
        command.addAll(extra);
        process = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve("out-" + port + ".txt").toFile()))
                .start();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            if (answers()) {
                return;
            }
            if (!process.isAlive()) {
                throw new IOException("redis-server on port " + port + " exited: " + command + "\n" + logs());
            }
            try {
                Thread.sleep(20); // polling a port for a starting server; nothing to wait on
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while starting redis-server", e);
            }
        }
        throw new IOException("redis-server on port " + port + " did not answer within 20 s\n" + logs());
    }

    /** {@code kill -9}: nothing is saved. */
    void kill() {
        Processes.kill(process);
    }

    void pause() {
        Processes.pause(process);
    }

    void resume() {
        Processes.resume(process);
    }

    /** Whether the server answers PING (a loading server answers with an error, so not yet). */
    boolean answers() {
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

    /** The last lines of every log in this server's directory, for failure messages. */
    String logs() {
        StringBuilder text = new StringBuilder();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".log"))
                    .sorted()
                    .toList()) {
                List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
                text.append("--- ").append(file.getFileName()).append('\n');
                lines.subList(Math.max(0, lines.size() - 15), lines.size())
                        .forEach(line -> text.append(line).append('\n'));
            }
        } catch (IOException e) {
            text.append("(logs could not be read: ").append(e).append(")\n");
        }
        return text.toString();
    }

    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            try {
                Processes.resume(process); // a paused server cannot exit
            } catch (RuntimeException e) {
                // it may have exited meanwhile
            }
            Processes.kill(process);
        }
    }

    /** A fresh directory for one scenario's servers. */
    static Path newDir(String name) {
        try {
            return Files.createTempDirectory("leasehold-faults-" + name);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
