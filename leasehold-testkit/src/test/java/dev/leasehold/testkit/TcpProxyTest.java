package dev.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.testkit.TcpProxy.Direction;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The partition proxy against a line echo server of its own on loopback. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpProxyTest {

    private ServerSocket echo;
    private final BlockingQueue<String> received = new LinkedBlockingQueue<>();
    private TcpProxy proxy;

    @BeforeEach
    void start() throws IOException {
        echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(() -> {
            while (!echo.isClosed()) {
                try {
                    Socket s = echo.accept();
                    Thread t = new Thread(() -> serve(s));
                    t.setDaemon(true);
                    t.start();
                } catch (IOException e) {
                    return;
                }
            }
        });
        acceptor.setDaemon(true);
        acceptor.start();
        proxy = TcpProxy.to("127.0.0.1", echo.getLocalPort());
    }

    private void serve(Socket s) {
        try (s;
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream()) {
            int b;
            StringBuilder line = new StringBuilder();
            while ((b = in.read()) >= 0) {
                out.write(b);
                out.flush();
                if (b == '\n') {
                    received.add(line.toString());
                    line.setLength(0);
                } else {
                    line.append((char) b);
                }
            }
        } catch (IOException ignored) {
            // client gone
        }
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        echo.close();
    }

    private Socket connect(int readTimeoutMillis) throws IOException {
        Socket s = new Socket(proxy.host(), proxy.port());
        s.setSoTimeout(readTimeoutMillis);
        return s;
    }

    private static String roundTrip(Socket s, String text) throws IOException {
        s.getOutputStream().write((text + "\n").getBytes());
        s.getOutputStream().flush();
        StringBuilder line = new StringBuilder();
        int b;
        while ((b = s.getInputStream().read()) >= 0 && b != '\n') {
            line.append((char) b);
        }
        if (b < 0) {
            throw new IOException("end of stream after '" + line + "'");
        }
        return line.toString();
    }

    @Test
    void passesBothWaysUntilBroken() throws Exception {
        try (Socket s = connect(5_000)) {
            assertThat(roundTrip(s, "hello")).isEqualTo("hello");
        }
        assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo("hello");
        assertThat(proxy.droppedBytes()).isZero();
    }

    @Test
    void aBlackHoleAcceptsAndNeverAnswersAndTheHealResetsTheConnectionsItSilenced() throws Exception {
        proxy.blackhole(Direction.BOTH);
        try (Socket s = connect(300)) {
            // connect succeeded: accepted, but nothing comes back and nothing reaches the server
            assertThatThrownBy(() -> roundTrip(s, "lost")).isInstanceOf(SocketTimeoutException.class);
            assertThat(received).isEmpty();
            assertThat(proxy.droppedBytes()).isEqualTo("lost\n".length());
            proxy.heal();
            s.setSoTimeout(5_000);
            assertThatThrownBy(() -> roundTrip(s, "after"))
                    .as("a stream that lost bytes cannot go on")
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        try (Socket s = connect(5_000)) {
            assertThat(roundTrip(s, "healed")).isEqualTo("healed");
        }
    }

    @Test
    void aDownstreamBlackHoleDeliversTheRequestAndLosesOnlyTheAnswer() throws Exception {
        try (Socket s = connect(300)) {
            assertThat(roundTrip(s, "before")).isEqualTo("before");
            proxy.blackhole(Direction.DOWNSTREAM);
            assertThatThrownBy(() -> roundTrip(s, "request")).isInstanceOf(SocketTimeoutException.class);
            assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo("before");
            assertThat(received.poll(5, TimeUnit.SECONDS))
                    .as("the request reached the server")
                    .isEqualTo("request");
            assertThat(proxy.droppedBytes()).isEqualTo("request\n".length());
        }
    }

    @Test
    void aDelayDeliversEverythingInOrderNoSoonerThanTheDelay() throws Exception {
        Duration delay = Duration.ofMillis(200);
        proxy.delay(Direction.UPSTREAM, delay);
        try (Socket s = connect(5_000)) {
            long start = System.nanoTime();
            assertThat(roundTrip(s, "slow")).isEqualTo("slow");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(delay);
            proxy.heal();
            assertThat(roundTrip(s, "fast")).as("a delayed connection goes on").isEqualTo("fast");
        }
        assertThat(proxy.droppedBytes()).isZero();
    }

    @Test
    void aCutResetsOpenConnectionsAndRefusesNewOnesUntilHealed() throws Exception {
        try (Socket open = connect(5_000)) {
            assertThat(roundTrip(open, "one")).isEqualTo("one");
            proxy.cut();
            assertThatThrownBy(() -> roundTrip(open, "two"))
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        try (Socket fresh = connect(5_000)) {
            assertThatThrownBy(() -> roundTrip(fresh, "three"))
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        assertThat(proxy.resets()).isGreaterThanOrEqualTo(2);
        proxy.heal();
        try (Socket s = connect(5_000)) {
            assertThat(roundTrip(s, "four")).isEqualTo("four");
        }
    }

    @Test
    void aCutFromOneProcessResetsItsConnectionsOnlyUntilHealed() throws Exception {
        Process other = new ProcessBuilder("sleep", "60").start();
        try (Socket mine = connect(5_000)) {
            assertThat(roundTrip(mine, "one")).isEqualTo("one");
            proxy.cutFrom(other.pid());
            assertThat(roundTrip(mine, "two")).as("another process's cut").isEqualTo("two");
            proxy.cutFrom(ProcessHandle.current().pid());
            assertThatThrownBy(() -> roundTrip(mine, "three"))
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
            try (Socket fresh = connect(5_000)) {
                assertThatThrownBy(() -> roundTrip(fresh, "four"))
                        .isInstanceOf(IOException.class)
                        .isNotInstanceOf(SocketTimeoutException.class);
            }
            proxy.heal();
            try (Socket s = connect(5_000)) {
                assertThat(roundTrip(s, "five")).isEqualTo("five");
            }
        } finally {
            other.destroyForcibly();
        }
    }

    @Test
    void aConnectionAcceptedWhileTheCutHappensIsResetToo() throws Exception {
        // The cut comes after the acceptor admitted the connection and before it registered it: the
        // window in which a connection used to escape the cut and pass traffic all through it.
        AtomicInteger admitted = new AtomicInteger();
        proxy.afterAdmitting = () -> {
            if (admitted.incrementAndGet() == 1) {
                proxy.cut();
            }
        };
        try (Socket raced = connect(5_000)) {
            assertThatThrownBy(() -> roundTrip(raced, "during the cut"))
                    .as("a connection admitted as the cut began must not pass traffic")
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
        assertThat(admitted).hasValue(1);
        assertThat(received).isEmpty();
        assertThat(proxy.resets()).isEqualTo(1);
        proxy.heal();
        try (Socket s = connect(5_000)) {
            assertThat(roundTrip(s, "healed")).isEqualTo("healed");
        }
    }

    @Test
    void aFaultArmedForTheNextRequestDeliversThatRequestAndLosesOnlyItsAnswer() throws Exception {
        try (Socket s = connect(300)) {
            assertThat(roundTrip(s, "before")).isEqualTo("before");
            proxy.onNextRequest(() -> proxy.blackhole(Direction.DOWNSTREAM));
            assertThat(proxy.droppedBytes())
                    .as("nothing is lost before the next request")
                    .isZero();
            assertThatThrownBy(() -> roundTrip(s, "request")).isInstanceOf(SocketTimeoutException.class);
            assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo("before");
            assertThat(received.poll(5, TimeUnit.SECONDS))
                    .as("the request that set the fault off reached the server")
                    .isEqualTo("request");
            assertThat(proxy.droppedBytes()).isEqualTo("request\n".length());
        }
    }
}
