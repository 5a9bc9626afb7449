package dev.leasehold.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Two PostgreSQL clusters this JVM started on free loopback ports: a primary and a standby made
 * from it with {@code pg_basebackup}, streaming asynchronously, or synchronously ({@code
 * synchronous_standby_names = '*'}, {@code synchronous_commit = on}: a commit is acknowledged once
 * the standby has flushed its WAL). A scenario kills the standby so that it misses what follows,
 * kills the primary, starts the standby again if it killed it, and promotes it. As root the server
 * runs as the {@code postgres} user ({@code setpriv}). Closing kills both and deletes their data.
 */
final class PostgresPair implements AutoCloseable {

    private static final Path BIN_ROOT = Path.of("/usr/lib/postgresql");

    private final Path bin;
    private final Path dir;
    private final int primaryPort;
    private final int standbyPort;
    private Process primary;
    private Process standby;
    /** The standby's WAL receiver while {@link #pauseReceiver} has it stopped, else 0. */
    private long pausedReceiver;

    private PostgresPair(Path bin, Path dir, int primaryPort, int standbyPort) {
        this.bin = bin;
        this.dir = dir;
        this.primaryPort = primaryPort;
        this.standbyPort = standbyPort;
    }

    /** The directory of the server's binaries ({@code initdb}, {@code postgres}, {@code pg_basebackup}). */
    static Optional<Path> binaries() {
        if (!Files.isDirectory(BIN_ROOT)) {
            return Optional.empty();
        }
        try (Stream<Path> versions = Files.list(BIN_ROOT)) {
            return versions.map(v -> v.resolve("bin"))
                    .filter(b -> Files.isExecutable(b.resolve("postgres"))
                            && Files.isExecutable(b.resolve("initdb"))
                            && Files.isExecutable(b.resolve("pg_basebackup")))
                    .max(Comparator.naturalOrder());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * Starts the primary, copies it to the standby and starts that; both accept connections on
     * return and, if {@code synchronous}, the primary reports the standby as synchronous.
     */
    static PostgresPair start(Path bin, boolean synchronous) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("leasehold-pg-pair");
        PostgresPair pair = new PostgresPair(bin, dir, Processes.freePort(), Processes.freePort());
        try {
            pair.init();
            if (synchronous) {
                pair.makeSynchronous();
            }
            return pair;
        } catch (SQLException e) {
            pair.close();
            throw new IOException("could not make the standby synchronous", e);
        } catch (IOException | InterruptedException | RuntimeException e) {
            pair.close();
            throw e;
        }
    }

    /**
     * Names every standby synchronous on the primary, with {@code synchronous_commit = on}, and
     * waits until the primary reports the standby's stream as {@code sync}.
     */
    private void makeSynchronous() throws SQLException, InterruptedException {
        execute(primaryPort, "ALTER SYSTEM SET synchronous_standby_names = '*'");
        execute(primaryPort, "ALTER SYSTEM SET synchronous_commit = 'on'");
        query(primaryPort, "SELECT pg_reload_conf()");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!"1".equals(query(primaryPort, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the primary did not report the standby as synchronous within 60 s");
            }
            Thread.sleep(20);
        }
    }

    /** The primary's {@code synchronous_standby_names} and {@code synchronous_commit}, for the report. */
    String replicationSettings() throws SQLException {
        return "synchronous_standby_names = '" + query(primaryPort, "SHOW synchronous_standby_names")
                + "', synchronous_commit = " + query(primaryPort, "SHOW synchronous_commit");
    }

    private void init() throws IOException, InterruptedException {
        owned(dir);
        run(List.of(
                bin.resolve("initdb").toString(),
                "-D",
                data("primary").toString(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8"));
        Files.writeString(
                data("primary").resolve("postgresql.conf"),
                String.join(
                        "\n",
                        "",
                        "listen_addresses = '127.0.0.1'",
                        "port = " + primaryPort,
                        "unix_socket_directories = '" + dir + "'",
                        "wal_level = replica",
                        "max_wal_senders = 4",
                        "hot_standby = on",
                        "max_connections = 40",
                        "shared_buffers = 16MB",
                        "fsync = off",
                        ""),
                java.nio.file.StandardOpenOption.APPEND);
        primary = launch("primary");
        awaitReady(primaryPort, primary);
        run(List.of(
                bin.resolve("pg_basebackup").toString(),
                "-h",
                "127.0.0.1",
                "-p",
                String.valueOf(primaryPort),
                "-U",
                "postgres",
                "-D",
                data("standby").toString(),
                "-R",
                "-X",
                "stream",
                "--no-sync"));
        Files.writeString(
                data("standby").resolve("postgresql.conf"),
                "\nport = " + standbyPort + "\n",
                java.nio.file.StandardOpenOption.APPEND);
        standby = launch("standby");
        awaitReady(standbyPort, standby);
    }

    String primaryUrl() {
        return url(primaryPort);
    }

    String standbyUrl() {
        return url(standbyPort);
    }

    private static String url(int port) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?connectTimeout=2&socketTimeout=10";
    }

    /**
     * The application name of the sessions of a scenario's background workload, which {@link
     * #awaitCommitsWaitingForStandby} does not count.
     */
    static final String WORKLOAD = "faults-workload";

    /** A small pool on {@code url}. */
    static HikariDataSource pool(String url, String name) {
        return pool(url, name, null);
    }

    /** A small pool on {@code url} whose sessions show {@code applicationName} (null: the driver's). */
    static HikariDataSource pool(String url, String name, String applicationName) {
        HikariConfig config = new HikariConfig();
        if (applicationName != null) {
            config.addDataSourceProperty("ApplicationName", applicationName);
        }
        config.setJdbcUrl(url);
        config.setUsername("postgres");
        config.setMaximumPoolSize(4);
        config.setMinimumIdle(0);
        config.setPoolName(name);
        config.setConnectionTimeout(3_000);
        config.setInitializationFailTimeout(-1);
        return new HikariDataSource(config);
    }

    /** Waits until the standby has replayed everything the primary has written so far. */
    void awaitStandbyCaughtUp(Duration atMost) throws SQLException, InterruptedException {
        String written = query(primaryPort, "SELECT pg_current_wal_lsn()::text");
        long deadline = System.nanoTime() + atMost.toNanos();
        while (System.nanoTime() < deadline) {
            String behind = query(standbyPort, "SELECT pg_wal_lsn_diff('" + written + "', pg_last_wal_replay_lsn())");
            if (Double.parseDouble(behind) <= 0) {
                return;
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("the standby did not replay up to " + written + " within " + atMost);
    }

    /**
     * Stops ({@code SIGSTOP}) the standby's WAL receiver, so that with a synchronous standby every
     * commit on the primary waits for it, until {@link #resumeReceiver} (or closing).
     */
    void pauseReceiver() throws SQLException, IOException, InterruptedException {
        long pid = Long.parseLong(query(standbyPort, "SELECT pid FROM pg_stat_wal_receiver"));
        signal("-STOP", pid);
        pausedReceiver = pid;
    }

    /** Lets the WAL receiver stopped by {@link #pauseReceiver} run again ({@code SIGCONT}). */
    void resumeReceiver() throws IOException, InterruptedException {
        if (pausedReceiver != 0) {
            signal("-CONT", pausedReceiver);
            pausedReceiver = 0;
        }
    }

    /**
     * Waits until at least one session on the primary waits for the synchronous standby to confirm
     * its commit; returns how many do. Sessions of a {@linkplain #WORKLOAD workload} are not counted.
     */
    int awaitCommitsWaitingForStandby(Duration atMost) throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (true) {
            int waiting = Integer.parseInt(query(
                    primaryPort,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'" + " AND application_name <> '"
                            + WORKLOAD + "'"));
            if (waiting > 0 || System.nanoTime() > deadline) {
                return waiting;
            }
            Thread.sleep(20);
        }
    }

    private static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", signal, String.valueOf(pid))
                .redirectErrorStream(true)
                .start();
        String output = new String(kill.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!kill.waitFor(30, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill " + signal + " " + pid + " failed: " + output);
        }
    }

    /** {@code kill -9} of the standby's postmaster. */
    void killStandby() {
        Processes.kill(standby);
    }

    /** {@code kill -9} of the primary's postmaster. */
    void killPrimary() {
        Processes.kill(primary);
    }

    /** Starts the killed standby again; it recovers what it had and stays a standby. */
    void restartStandby() throws IOException, InterruptedException {
        // The killed postmaster's children leave shortly after it; until they have, a new
        // postmaster refuses the data directory and exits, so it is started again.
        for (int attempt = 1; ; attempt++) {
            standby = launch("standby");
            try {
                awaitReady(standbyPort, standby);
                return;
            } catch (IOException e) {
                if (standby.isAlive() || attempt == 50) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    /** Promotes the standby and waits until it takes writes. */
    void promoteStandby() throws SQLException {
        String promoted = query(standbyPort, "SELECT pg_promote(true, 30)");
        if (!"t".equals(promoted) && !"true".equals(promoted)) {
            throw new IllegalStateException("the standby was not promoted within 30 s: " + promoted);
        }
    }

    private static void execute(int port, String sql) throws SQLException {
        try (Connection connection = DriverManager.getConnection(url(port), "postgres", "");
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private String query(int port, String sql) throws SQLException {
        try (Connection connection = DriverManager.getConnection(url(port), "postgres", "");
                Statement statement = connection.createStatement();
                ResultSet row = statement.executeQuery(sql)) {
            row.next();
            return row.getString(1);
        }
    }

    private Path data(String name) {
        return dir.resolve(name);
    }

    private Process launch(String name) throws IOException {
        return new ProcessBuilder(as(List.of(
                        bin.resolve("postgres").toString(), "-D", data(name).toString())))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve(name + ".log").toFile()))
                .start();
    }

    private void awaitReady(int port, Process process) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        SQLException last = null;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("PostgreSQL on port " + port + " exited; see " + dir);
            }
            try (Connection connection = DriverManager.getConnection(url(port), "postgres", "")) {
                if (connection.isValid(2)) {
                    return;
                }
            } catch (SQLException e) {
                last = e;
                Thread.sleep(50);
            }
        }
        throw new IOException(
                "PostgreSQL on port " + port + " did not accept connections within 60 s; see " + dir, last);
    }

    private void run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(as(command))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve("setup.log").toFile()))
                .start();
        if (!process.waitFor(120, TimeUnit.SECONDS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IOException(command.get(0) + " failed; see " + dir.resolve("setup.log") + ":\n"
                    + String.join("\n", tail(dir.resolve("setup.log"))));
        }
    }

    private static List<String> tail(Path file) {
        try {
            List<String> lines = Files.readAllLines(file);
            return lines.subList(Math.max(0, lines.size() - 10), lines.size());
        } catch (IOException e) {
            return List.of("(unreadable)");
        }
    }

    /** As root the server must run as another user: {@code postgres}, which then owns the data. */
    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static List<String> as(List<String> command) {
        if (!root()) {
            return command;
        }
        List<String> wrapped =
                new ArrayList<>(List.of("setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"));
        wrapped.addAll(command);
        return wrapped;
    }

    private static void owned(Path dir) throws IOException, InterruptedException {
        if (!root()) {
            return;
        }
        Process chown = new ProcessBuilder("chown", "postgres:postgres", dir.toString())
                .redirectErrorStream(true)
                .start();
        chown.getInputStream().readAllBytes();
        if (!chown.waitFor(30, TimeUnit.SECONDS) || chown.exitValue() != 0) {
            throw new IOException("could not give " + dir + " to the postgres user");
        }
    }

    @Override
    public void close() {
        try {
            resumeReceiver(); // a stopped process would outlive its killed postmaster
        } catch (IOException e) {
            // it has gone already
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Process process : new Process[] {primary, standby}) {
            if (process != null && process.isAlive()) {
                Processes.kill(process);
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }
}
