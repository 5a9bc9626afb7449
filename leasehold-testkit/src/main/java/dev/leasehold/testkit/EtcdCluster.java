package dev.leasehold.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code etcd} processes this JVM started on free loopback ports: one node, or a cluster of several
 * members that a test may kill and restart to force leader elections. Each member keeps its data
 * directory across a restart, so it rejoins as the same member. Closing stops every member and
 * deletes the data. Thread-safe.
 */
public final class EtcdCluster implements AutoCloseable {

    /** The binary looked for on the {@code PATH} (Debian package {@code etcd-server}). */
    public static final String BINARY = "etcd";

    private static final Pattern LEADER = Pattern.compile("\"leader\"\\s*:\\s*\"?(\\d+)");
    private static final Pattern MEMBER = Pattern.compile("\"member_id\"\\s*:\\s*\"?(\\d+)");

    private final Path dir;
    private final List<Member> members = new ArrayList<>();
    private final Duration heartbeat;
    private final Duration electionTimeout;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();

    private static final class Member {
        final String name;
        final int clientPort;
        final int peerPort;
        /** The proxy its peers reach it through, or {@code null}: they reach it directly. */
        TcpProxy peerProxy;

        Process process;

        /** The peer port it advertises: its proxy's, if it has one. */
        int advertisedPeerPort() {
            return peerProxy == null ? peerPort : peerProxy.port();
        }

        Member(String name, int clientPort, int peerPort) {
            this.name = name;
            this.clientPort = clientPort;
            this.peerPort = peerPort;
        }
    }

    private EtcdCluster(Path dir, int size, Duration heartbeat, Duration electionTimeout, boolean peerProxies)
            throws IOException {
        this.dir = dir;
        this.heartbeat = heartbeat;
        this.electionTimeout = electionTimeout;
        for (int i = 0; i < size; i++) {
            Member member = new Member("m" + i, freePort(), freePort());
            members.add(member);
            if (peerProxies) {
                member.peerProxy = TcpProxy.to("127.0.0.1", member.peerPort);
            }
        }
    }

    /**
     * Starts {@code size} members and waits until each answers its health check.
     *
     * @param heartbeat etcd's heartbeat interval
     * @param electionTimeout etcd's election timeout; etcd's shortest lease is 1.5 times this,
     *     rounded up to whole seconds
     * @throws IOException if the binary is missing or a member does not come up within 30 s
     */
    public static EtcdCluster start(int size, Duration heartbeat, Duration electionTimeout)
            throws IOException, InterruptedException {
        return start(size, heartbeat, electionTimeout, false);
    }

    /**
     * Starts {@code size} members as {@link #start} does, each reached by its peers through a
     * {@link TcpProxy} of its own (it advertises the proxy's address as its peer URL), so that
     * {@link #isolate} can cut one member from the others while its clients still reach it.
     */
    public static EtcdCluster startWithPeerProxies(int size, Duration heartbeat, Duration electionTimeout)
            throws IOException, InterruptedException {
        return start(size, heartbeat, electionTimeout, true);
    }

    private static EtcdCluster start(int size, Duration heartbeat, Duration electionTimeout, boolean peerProxies)
            throws IOException, InterruptedException {
        if (size < 1) {
            throw new IllegalArgumentException("a cluster needs at least one member, was " + size);
        }
        // A member that exits on its first start most often lost a port to another process between
        // the choice and the bind; a fresh cluster on fresh ports is tried a few times.
        for (int attempt = 1; ; attempt++) {
            EtcdCluster cluster = new EtcdCluster(
                    Files.createTempDirectory("leasehold-etcd"), size, heartbeat, electionTimeout, peerProxies);
            try {
                for (int i = 0; i < size; i++) {
                    cluster.launch(i);
                }
                for (int i = 0; i < size; i++) {
                    cluster.awaitHealthy(i, Duration.ofSeconds(30));
                }
                return cluster;
            } catch (MemberExitedException e) {
                cluster.close();
                if (attempt == START_ATTEMPTS) {
                    throw e;
                }
            } catch (IOException | InterruptedException | RuntimeException e) {
                cluster.close();
                throw e;
            }
        }
    }

    private static final int START_ATTEMPTS = 3;

    /** A member's process ended while it was awaited; the message holds the end of its log. */
    static final class MemberExitedException extends IOException {
        private static final long serialVersionUID = 1L;

        MemberExitedException(String message) {
            super(message);
        }
    }

    /** Whether the etcd binary can be run here. */
    public static boolean installed() {
        try {
            Process process = new ProcessBuilder(BINARY, "--version")
                    .redirectErrorStream(true)
                    .start();
            process.getInputStream().readAllBytes();
            return process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** How many members the cluster has, running or not. */
    public int size() {
        return members.size();
    }

    /** The client URLs of every member ({@code http://127.0.0.1:port}), in member order. */
    public List<String> endpoints() {
        return members.stream().map(m -> "http://127.0.0.1:" + m.clientPort).toList();
    }

    /** The client URL of one member. */
    public String endpoint(int member) {
        return endpoints().get(member);
    }

    /**
     * Cuts {@code member} off from every other member, both ways, while its clients still reach
     * it: its peer proxy resets every connection, and the other members' peer proxies reset the
     * connections its process makes, until {@link #healPeers()}. Only for a cluster started
     * {@linkplain #startWithPeerProxies with peer proxies}.
     */
    public synchronized void isolate(int member) {
        Member isolated = members.get(member);
        if (isolated.peerProxy == null || isolated.process == null) {
            throw new IllegalStateException("member " + member + " is not running behind a peer proxy");
        }
        long pid = isolated.process.pid();
        isolated.peerProxy.cut();
        for (Member other : members) {
            if (other != isolated) {
                other.peerProxy.cutFrom(pid);
            }
        }
    }

    /** Heals every peer proxy: the members reach each other again. */
    public synchronized void healPeers() {
        for (Member member : members) {
            if (member.peerProxy != null) {
                member.peerProxy.heal();
            }
        }
    }

    /** The peer proxy of {@code member}, whose counters show a cut was real; empty without proxies. */
    public java.util.Optional<TcpProxy> peerProxy(int member) {
        return java.util.Optional.ofNullable(members.get(member).peerProxy);
    }

    /** Kills a member at once ({@code SIGKILL}), as a crash would; its data stays for a restart. */
    public synchronized void kill(int member) throws InterruptedException {
        Process process = members.get(member).process;
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            members.get(member).process = null;
        }
    }

    /** Starts a killed member again from its data directory and waits until it is healthy. */
    public void restart(int member) throws IOException, InterruptedException {
        synchronized (this) {
            if (members.get(member).process != null) {
                throw new IllegalStateException("member " + member + " is running");
            }
            launch(member);
        }
        awaitHealthy(member, Duration.ofSeconds(30));
    }

    /** Whether the member's process is running. */
    public synchronized boolean running(int member) {
        Process process = members.get(member).process;
        return process != null && process.isAlive();
    }

    /**
     * The member that is the leader now, asked of every running member through etcd's JSON
     * gateway ({@code /v3/maintenance/status}); empty while there is none (an election).
     */
    public OptionalInt leader() {
        for (int i = 0; i < members.size(); i++) {
            if (!running(i)) {
                continue;
            }
            String status = post(i, "/v3/maintenance/status");
            if (status == null) {
                continue;
            }
            Matcher leader = LEADER.matcher(status);
            Matcher member = MEMBER.matcher(status);
            if (leader.find() && member.find() && leader.group(1).equals(member.group(1))) {
                return OptionalInt.of(i);
            }
        }
        return OptionalInt.empty();
    }

    /** Waits until some running member reports itself leader. */
    public int awaitLeader(Duration atMost) throws InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (System.nanoTime() < deadline) {
            OptionalInt leader = leader();
            if (leader.isPresent()) {
                return leader.getAsInt();
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("no etcd leader within " + atMost);
    }

    private void launch(int index) throws IOException {
        Member member = members.get(index);
        StringBuilder initial = new StringBuilder();
        for (Member m : members) {
            if (initial.length() > 0) {
                initial.append(',');
            }
            initial.append(m.name).append("=http://127.0.0.1:").append(m.advertisedPeerPort());
        }
        Path data = dir.resolve(member.name);
        List<String> command = List.of(
                BINARY,
                "--name",
                member.name,
                "--data-dir",
                data.toString(),
                "--listen-client-urls",
                "http://127.0.0.1:" + member.clientPort,
                "--advertise-client-urls",
                "http://127.0.0.1:" + member.clientPort,
                "--listen-peer-urls",
                "http://127.0.0.1:" + member.peerPort,
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:" + member.advertisedPeerPort(),
                "--initial-cluster",
                initial.toString(),
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                dir.getFileName().toString(),
                "--heartbeat-interval",
                String.valueOf(heartbeat.toMillis()),
                "--election-timeout",
                String.valueOf(electionTimeout.toMillis()),
                "--logger",
                "zap",
                "--log-level",
                "warn",
                "--log-outputs",
                dir.resolve(member.name + ".log").toString());
        member.process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve(member.name + ".out").toFile()))
                .start();
    }

    private void awaitHealthy(int index, Duration atMost) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (System.nanoTime() < deadline) {
            Process process;
            synchronized (this) {
                process = members.get(index).process;
            }
            if (process == null || !process.isAlive()) {
                throw new MemberExitedException(
                        "etcd member " + index + " exited; the end of its log:\n" + logTail(index));
            }
            String health = get(index, "/health");
            if (health != null && health.contains("\"health\":\"true\"")) {
                return;
            }
            Thread.sleep(50);
        }
        throw new IOException("etcd member " + index + " was not healthy within " + atMost + "; see " + dir);
    }

    private String logTail(int index) {
        StringBuilder tail = new StringBuilder();
        for (String suffix : List.of(".out", ".log")) {
            Path file = dir.resolve(members.get(index).name + suffix);
            try {
                List<String> lines = Files.readAllLines(file);
                lines.subList(Math.max(0, lines.size() - 8), lines.size())
                        .forEach(line -> tail.append(line).append('\n'));
            } catch (IOException e) {
                // no such file: the member wrote nothing there
            }
        }
        return tail.toString();
    }

    private String get(int member, String path) {
        return send(HttpRequest.newBuilder(URI.create(endpoint(member) + path))
                .timeout(Duration.ofSeconds(2))
                .GET()
                .build());
    }

    private String post(int member, String path) {
        return send(HttpRequest.newBuilder(URI.create(endpoint(member) + path))
                .timeout(Duration.ofSeconds(2))
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build());
    }

    private String send(HttpRequest request) {
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            return response.statusCode() == 200 ? response.body() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** Stops every member and deletes the data directories. */
    @Override
    public synchronized void close() {
        for (Member member : members) {
            if (member.peerProxy != null) {
                member.peerProxy.close();
            }
        }
        for (int i = 0; i < members.size(); i++) {
            Process process = members.get(i).process;
            if (process != null) {
                process.destroyForcibly();
            }
        }
        for (Member member : members) {
            if (member.process != null) {
                try {
                    member.process.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                member.process = null;
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }

    /**
     * A port below Linux's ephemeral range (32768 and up), free when tried: a port the kernel hands
     * out for {@code bind(0)} is also handed to outgoing connections, which can take it before the
     * member binds it.
     */
    private static synchronized int freePort() throws IOException {
        for (int tries = 0; tries < 500; tries++) {
            int port = ThreadLocalRandom.current().nextInt(20_000, 32_000);
            if (!TAKEN.add(port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                return port;
            } catch (IOException busy) {
                // in use: try another
            }
        }
        throw new IOException("no free loopback port between 20000 and 32000");
    }

    /** Ports handed out in this JVM, never handed out twice. */
    private static final Set<Integer> TAKEN = new HashSet<>();
}
