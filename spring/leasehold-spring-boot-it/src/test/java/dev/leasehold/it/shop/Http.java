package dev.leasehold.it.shop;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;

/** Raw HTTP to the shop: exact body bytes and every header, as a client sees them. */
final class Http {

    private static final HttpClient CLIENT =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final int port;

    Http(int port) {
        this.port = port;
    }

    /** One answer. */
    record Answer(int status, java.net.http.HttpHeaders headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        String header(String name) {
            return headers.firstValue(name).orElse(null);
        }

        List<String> all(String name) {
            return headers.allValues(name);
        }

        boolean replayed() {
            return "true".equals(header("Idempotent-Replayed"));
        }

        @Override
        public String toString() {
            return status + " " + text();
        }
    }

    Answer post(String path, String user, String key, String json) throws IOException, InterruptedException {
        return post(path, user, key, json, new String[0]);
    }

    /**
     * A JSON POST.
     *
     * @param user who signs in with HTTP basic; null for a guest
     * @param headers more headers, as name, value, name, value...
     */
    Answer post(String path, String user, String key, String json, String... headers)
            throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json));
        if (user != null) {
            request.header("Authorization", basic(user));
        }
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        for (int i = 0; i < headers.length; i += 2) {
            request.header(headers[i], headers[i + 1]);
        }
        HttpResponse<byte[]> response = CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
        return new Answer(response.statusCode(), response.headers(), response.body());
    }

    private static String basic(String user) {
        return "Basic "
                + Base64.getEncoder()
                        .encodeToString((user + ":" + ShopApplication.PASSWORD).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * A JSON POST over a plain socket, with {@code header}'s value sent as the raw bytes given
     * (bytes an HTTP client library refuses to send), answered with its status line and body.
     */
    String rawPost(String path, String key, String header, byte[] value, String json) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            java.io.ByteArrayOutputStream head = new java.io.ByteArrayOutputStream();
            head.writeBytes(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                            + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n"
                            + "Idempotency-Key: " + key + "\r\n" + header + ": ")
                    .getBytes(StandardCharsets.US_ASCII));
            head.writeBytes(value);
            head.writeBytes("\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            head.writeBytes(body);
            socket.getOutputStream().write(head.toByteArray());
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    Answer get(String path) throws IOException, InterruptedException {
        HttpResponse<byte[]> response = CLIENT.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
        return new Answer(response.statusCode(), response.headers(), response.body());
    }
}
