package dev.leasehold.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A {@code redis-server} of the bench's own on a free loopback port, without persistence, so the
 * command counts it reports belong to the bench alone (a shared server also counts everyone else).
 */
final class PrivateRedis implements AutoCloseable {

    private final Process process;
    private final Path dir;
    final String uri;

    private PrivateRedis(Process process, Path dir, int port) {
        this.process = process;
        this.dir = dir;
        this.uri = "redis://127.0.0.1:" + port;
    }

    static PrivateRedis start() throws IOException, InterruptedException {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Path dir = Files.createTempDirectory("leasehold-bench-redis");
        Process process = new ProcessBuilder(
                        "redis-server",
                        "--port",
                        Integer.toString(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        dir.toString())
                .redirectErrorStream(true)
                .redirectOutput(new File(dir.toFile(), "redis.log"))
                .start();
        PrivateRedis redis = new PrivateRedis(process, dir, port);
        RedisClient client = RedisClient.create(redis.uri);
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (true) {
                try (StatefulRedisConnection<String, String> c = client.connect()) {
                    c.sync().ping();
                    return redis;
                } catch (RuntimeException e) {
                    if (System.nanoTime() > deadline || !process.isAlive()) {
                        redis.close();
                        throw new IOException("redis-server did not start on port " + port + ": " + e, e);
                    }
                    Thread.sleep(50);
                }
            }
        } finally {
            client.shutdown();
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        File[] files = dir.toFile().listFiles();
        if (files != null) {
            for (File f : files) {
                f.delete();
            }
        }
        dir.toFile().delete();
    }
}
