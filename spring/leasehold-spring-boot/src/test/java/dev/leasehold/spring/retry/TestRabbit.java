package dev.leasehold.spring.retry;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import org.junit.jupiter.api.Assumptions;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;

/** The shared local RabbitMQ (127.0.0.1:5672, guest/guest), or the test is skipped naming it. */
final class TestRabbit {

    static final String HOST = "127.0.0.1";
    static final int PORT = 5672;

    private TestRabbit() {}

    /** A connection factory with simple publisher confirms on the shared broker. */
    static CachingConnectionFactory confirming() {
        if (!answers(HOST, PORT)) {
            Assumptions.abort("RabbitMQ: nothing listens at " + HOST + ":" + PORT + " (guest/guest)");
        }
        return confirming(PORT);
    }

    static CachingConnectionFactory confirming(int port) {
        CachingConnectionFactory factory = new CachingConnectionFactory(HOST, port);
        factory.setUsername("guest");
        factory.setPassword("guest");
        factory.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.SIMPLE);
        return factory;
    }

    static boolean answers(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
