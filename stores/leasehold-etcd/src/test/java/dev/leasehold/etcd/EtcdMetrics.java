package dev.leasehold.etcd;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What an etcd member counted, read from its {@code /metrics}: the tests' count of server work. */
final class EtcdMetrics {

    private EtcdMetrics() {}

    /**
     * The sum of a gRPC counter ({@code grpc_server_handled_total}, {@code
     * grpc_server_msg_received_total}, ...) of one method over its other labels.
     */
    static long sum(String endpoint, String counter, String method) throws Exception {
        String metrics = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(endpoint + "/metrics"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        Matcher line = Pattern.compile("(?m)^" + counter + "\\{[^}]*grpc_method=\"" + method + "\"[^}]*} ([0-9.e+]+)$")
                .matcher(metrics);
        long total = 0;
        while (line.find()) {
            total += (long) Double.parseDouble(line.group(1));
        }
        return total;
    }
}
