package dev.leasehold.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP proxy on a free loopback port between a client and one server that breaks the link on
 * command, for partition tests: each {@link Direction} on its own is {@linkplain #blackhole
 * black-holed} (bytes never delivered) or {@linkplain #delay delayed}, or every connection is
 * {@linkplain #cut() reset}, until {@link #heal()}. A connection whose bytes were black-holed is
 * reset at the heal, as a TCP stream never loses bytes and goes on. Counters show the fault was
 * real. Thread-safe; closing it resets every connection.
 */
public final class TcpProxy implements AutoCloseable {

    /** One direction of the link. */
    public enum Direction {
        /** Client to server. */
        UPSTREAM,
        /** Server to client. */
        DOWNSTREAM,
        /** Both. */
        BOTH;

        boolean covers(Direction one) {
            return this == BOTH || this == one;
        }
    }

    private static final int CHUNK = 16 * 1024;

    private final InetSocketAddress target;
    private final ServerSocket listener;
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    /** Guards registering a link against {@link #cut()} and {@link #close()}. */
    private final Object admission = new Object();

    private final Thread acceptor;
    private final AtomicLong droppedBytes = new AtomicLong();
    private final AtomicLong resets = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicReference<Runnable> onNextRequest = new AtomicReference<>();
    private volatile boolean cut;
    /** The process whose connections are reset until {@link #heal()}, or -1. */
    private volatile long cutPid = -1;

    private volatile boolean upBlackholed;
    private volatile boolean downBlackholed;
    private volatile long upDelayNanos;
    private volatile long downDelayNanos;
    private volatile boolean closed;

    /** Test seam: run on the acceptor after it admitted a connection, before it registers it. */
    volatile Runnable afterAdmitting = () -> {};

    private TcpProxy(InetSocketAddress target) throws IOException {
        this.target = target;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::acceptLoop, "tcp-proxy-" + listener.getLocalPort() + "-accept");
        this.acceptor.setDaemon(true);
        this.acceptor.start();
    }

    /**
     * A proxy to {@code host:port}, listening on a free loopback port, passing everything.
     *
     * @throws IOException if no port could be bound
     */
    public static TcpProxy to(String host, int port) throws IOException {
        Objects.requireNonNull(host, "host is missing (null)");
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, was " + port);
        }
        return new TcpProxy(new InetSocketAddress(host, port));
    }

    /** The host clients connect to: the loopback address. */
    public String host() {
        return listener.getInetAddress().getHostAddress();
    }

    /** The port clients connect to instead of the server's. */
    public int port() {
        return listener.getLocalPort();
    }

    /** Black-holes {@code direction}: its bytes are dropped, connections stay open. */
    public void blackhole(Direction direction) {
        Objects.requireNonNull(direction, "direction is missing (null)");
        if (direction.covers(Direction.UPSTREAM)) {
            upBlackholed = true;
        }
        if (direction.covers(Direction.DOWNSTREAM)) {
            downBlackholed = true;
        }
    }

    /** Delays every chunk of {@code direction} by {@code delay} (zero: no delay). */
    public void delay(Direction direction, Duration delay) {
        Objects.requireNonNull(direction, "direction is missing (null)");
        if (delay == null || delay.isNegative()) {
            throw new IllegalArgumentException("delay must be zero or positive, was " + delay);
        }
        if (direction.covers(Direction.UPSTREAM)) {
            upDelayNanos = delay.toNanos();
        }
        if (direction.covers(Direction.DOWNSTREAM)) {
            downDelayNanos = delay.toNanos();
        }
    }

    /**
     * Runs {@code fault} once, on the proxy's thread, as soon as a client next sends bytes and
     * before they are delivered: a fault that begins with a request. With {@code () ->
     * blackhole(Direction.DOWNSTREAM)} the request reaches the server and only its answer is lost,
     * which a black hole set beforehand cannot promise (a client that first checks its connection
     * would never send the request). Replaces a fault not yet run; {@link #heal()} drops it.
     */
    public void onNextRequest(Runnable fault) {
        onNextRequest.set(Objects.requireNonNull(fault, "fault is missing (null)"));
    }

    /** Resets every open connection, and every new one as it is accepted, until {@link #heal()}. */
    public void cut() {
        List<Link> open;
        // Under the lock that registers links: a connection being admitted now is either in the
        // snapshot or sees the cut when it registers, never neither.
        synchronized (admission) {
            cut = true;
            open = List.copyOf(links);
        }
        for (Link link : open) {
            link.reset();
        }
    }

    /**
     * Resets every open connection that process {@code pid} made, and every new one it makes, until
     * {@link #heal()}; other clients' connections pass. A member of a cluster whose peers are each
     * reached through a proxy is cut off from them, both ways, by cutting its own proxy and its
     * connections through theirs. The owner of a connection is found in {@code /proc} (Linux).
     *
     * @throws UnsupportedOperationException where {@code /proc/net/tcp} is not readable
     */
    public void cutFrom(long pid) {
        if (!LoopbackSockets.supported()) {
            throw new UnsupportedOperationException("no /proc/net/tcp here: a connection's process is unknown");
        }
        List<Link> open;
        synchronized (admission) {
            cutPid = pid;
            open = List.copyOf(links);
        }
        for (Link link : open) {
            if (link.from(pid)) {
                link.reset();
            }
        }
    }

    /**
     * Lets everything pass again, without delay; connections that lost bytes to a black hole are
     * reset first.
     */
    public void heal() {
        onNextRequest.set(null);
        upBlackholed = false;
        downBlackholed = false;
        upDelayNanos = 0;
        downDelayNanos = 0;
        for (Link link : links) {
            if (link.lostBytes) {
                link.reset();
            }
        }
        cut = false;
        cutPid = -1;
    }

    /** Bytes a black hole dropped so far. */
    public long droppedBytes() {
        return droppedBytes.get();
    }

    /** Connections reset so far by {@link #cut()}, {@link #heal()} or {@link #close()}. */
    public long resets() {
        return resets.get();
    }

    /** Bytes delivered so far, both ways: a client behind the proxy is talking while it grows. */
    public long forwardedBytes() {
        return forwarded.get();
    }

    /** Connections accepted so far. */
    public long acceptedConnections() {
        return accepted.get();
    }

    @Override
    public void close() {
        List<Link> open;
        synchronized (admission) {
            closed = true;
            open = List.copyOf(links);
        }
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Link link : open) {
            link.reset();
        }
    }

    @Override
    public String toString() {
        return "TcpProxy[" + host() + ":" + port() + " -> " + target.getHostString() + ":" + target.getPort() + "]";
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                continue;
            }
            accepted.incrementAndGet();
            long banned = cutPid;
            if (cut || (banned >= 0 && LoopbackSockets.ownedBy(banned, client.getPort(), port()))) {
                resetQuietly(client);
                resets.incrementAndGet();
                continue;
            }
            Socket server = new Socket();
            try {
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                server.connect(target, 5_000);
            } catch (IOException e) {
                resetQuietly(client);
                resetQuietly(server);
                continue;
            }
            afterAdmitting.run();
            Link link = new Link(client, server);
            synchronized (admission) {
                // A cut (or close) since the check above reset only the links registered then.
                if (!cut && !closed && (cutPid < 0 || !link.from(cutPid))) {
                    links.add(link);
                }
            }
            if (!links.contains(link)) {
                link.reset();
                continue;
            }
            link.start();
        }
    }

    private static void resetQuietly(Socket socket) {
        try {
            socket.setSoLinger(true, 0);
        } catch (SocketException ignored) {
            // closing anyway
        }
        try {
            socket.close();
        } catch (IOException ignored) {
            // already gone
        }
    }

    /** One client connection and its server connection, pumped by a thread each way. */
    private final class Link {
        private final Socket client;
        private final Socket server;
        private volatile boolean lostBytes;
        private volatile boolean done;

        Link(Socket client, Socket server) {
            this.client = client;
            this.server = server;
        }

        void start() {
            Thread up = new Thread(() -> pump(client, server, true), "tcp-proxy-" + port() + "-up");
            Thread down = new Thread(() -> pump(server, client, false), "tcp-proxy-" + port() + "-down");
            up.setDaemon(true);
            down.setDaemon(true);
            up.start();
            down.start();
        }

        /** Whether process {@code pid} made this connection. */
        boolean from(long pid) {
            return LoopbackSockets.ownedBy(pid, client.getPort(), port());
        }

        void reset() {
            synchronized (this) {
                if (!done) {
                    done = true;
                    resets.incrementAndGet();
                }
            }
            resetQuietly(client);
            resetQuietly(server);
            links.remove(this);
        }

        private void pump(Socket from, Socket to, boolean upstream) {
            byte[] buffer = new byte[CHUNK];
            try (InputStream in = from.getInputStream();
                    OutputStream out = to.getOutputStream()) {
                while (!done) {
                    int n = in.read(buffer);
                    if (n < 0) {
                        break;
                    }
                    if (upstream) {
                        Runnable fault = onNextRequest.getAndSet(null);
                        if (fault != null) {
                            fault.run();
                        }
                    }
                    if (cut) {
                        // a cut resets the link; nothing read meanwhile is delivered
                        droppedBytes.addAndGet(n);
                        reset();
                        break;
                    }
                    if (upstream ? upBlackholed : downBlackholed) {
                        lostBytes = true;
                        droppedBytes.addAndGet(n);
                        continue;
                    }
                    long delay = upstream ? upDelayNanos : downDelayNanos;
                    if (delay > 0) {
                        // The delay is the fault itself: this direction's bytes arrive that much later.
                        TimeUnit.NANOSECONDS.sleep(delay);
                    }
                    if (cut) {
                        droppedBytes.addAndGet(n);
                        reset();
                        break;
                    }
                    if (done) {
                        break;
                    }
                    if (upstream ? upBlackholed : downBlackholed) {
                        // black-holed while this chunk was delayed
                        lostBytes = true;
                        droppedBytes.addAndGet(n);
                        continue;
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                    forwarded.addAndGet(n);
                }
            } catch (IOException | InterruptedException e) {
                // the link is gone either way
            } finally {
                boolean first;
                synchronized (this) {
                    first = !done;
                    done = true;
                }
                if (first) {
                    resetQuietly(client);
                    resetQuietly(server);
                    links.remove(this);
                }
            }
        }
    }
}
