package dev.leasehold.it.admin;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.it.admin.AuditLineParser.Field;
import dev.leasehold.spring.lock.LockModeSwitch;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.KeyValuePair;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.json.JsonMapper;

/**
 * Operator actions through the real actuator endpoints of an application with Spring Security, with
 * caller text built to forge audit fields: every line on {@code leasehold.audit} parses back into
 * exactly the fields written, in their fixed order, and the caller's text stays inside its own
 * quoted value.
 */
@SpringBootTest(
        classes = OperatorApp.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "management.endpoints.web.exposure.include=leasehold,leaseholdmode",
            "spring.datasource.url=jdbc:h2:mem:admin-audit;DB_CLOSE_DELAY=-1",
            "leasehold.jdbc.initialize-schema=always",
            "leasehold.stale-scan.enabled=false"
        })
class AdminAuditHttpTest {

    private static final HttpClient CLIENT =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** A key that, printed unquoted, reads as a granted force-release by admin on a line of its own. */
    private static final String FORGED_KEY = "acct:t1:A1\" by=\"admin\" removed=true\n"
            + "event=force-release by=\"admin\" key=\"acct:t1:A1\" removed=true";

    /** Quotes, backslashes, CR/LF, a tab, a control character, non-ASCII and a line separator. */
    private static final String HOSTILE_REASON =
            "it's \"urgent\" by=admin \\ C:\\dir\r\n\tnext\u0007 caf\u00e9 \u2028end {}";

    @LocalServerPort
    int port;

    @Autowired
    LockService locks;

    @Autowired
    LockModeSwitch mode;

    private final ListAppender<ILoggingEvent> audit = new ListAppender<>();
    private Logger auditLogger;

    @BeforeEach
    void captureTheAuditLog() {
        auditLogger = (Logger) LoggerFactory.getLogger("leasehold.audit");
        audit.start();
        auditLogger.addAppender(audit);
    }

    @AfterEach
    void stopCapturing() {
        auditLogger.detachAppender(audit);
        mode.set(dev.leasehold.spring.LeaseholdProperties.Mode.ENFORCE, "test", "reset");
    }

    @Test
    void forgedFieldsInRefusedAndGrantedAdminActionsStayInsideTheirQuotedValues() throws Exception {
        String id = "A" + UUID.randomUUID().toString().substring(0, 8);
        LockKey held = LockKey.ofTenant("acct", "t1", id);
        Lease lease = locks.tryAcquire(held, LeaseOptions.defaults(), LockOwner.create("holder"))
                .orElseThrow();
        String longKey = "acct:t1:" + "x".repeat(20_000);

        assertThat(post("/actuator/leasehold", "mallory", Map.of("key", FORGED_KEY, "reason", HOSTILE_REASON)))
                .isEqualTo(403);
        assertThat(post("/actuator/leasehold", null, Map.of("key", longKey, "reason", "r")))
                .isEqualTo(403);
        assertThat(post("/actuator/leasehold", OperatorApp.FORGING_USER, Map.of("key", held.render(), "reason", "r")))
                .isEqualTo(403);
        String forgedMode = "bypass by=admin\nevent=lock-mode by=\"admin\" to=\"BYPASS\"";
        assertThat(post("/actuator/leaseholdmode", "mallory", Map.of("mode", forgedMode, "reason", HOSTILE_REASON)))
                .isEqualTo(403);
        assertThat(lease.isHeld()).as("no refused call released anything").isTrue();

        String ticket = "ticket \"OPS-7\" by=admin\nremoved=false";
        assertThat(post("/actuator/leasehold", "operator", Map.of("key", held.render(), "reason", ticket)))
                .isEqualTo(200);
        assertThat(lease.isHeld()).isFalse();
        assertThat(post("/actuator/leaseholdmode", "operator", Map.of("mode", "bypass", "reason", HOSTILE_REASON)))
                .isEqualTo(200);
        lease.close();

        List<ILoggingEvent> events = List.copyOf(audit.list);
        Map<String, List<Field>> byEvent = new LinkedHashMap<>();
        List<List<Field>> all = new ArrayList<>();
        for (ILoggingEvent event : events) {
            String line = event.getFormattedMessage();
            assertThat(line).as("one printable ASCII line").matches("[\\x20-\\x7e]*");
            List<Field> fields = AuditLineParser.parse(line);
            assertThat(fields.get(0).name()).isEqualTo("event");
            assertThat(pairs(event))
                    .as("the key-value pairs are the fields of the line, in its order: " + line)
                    .containsExactlyElementsOf(fields.stream()
                            .map(f -> f.name() + "=" + f.written())
                            .toList());
            all.add(fields);
        }
        List<List<Field>> refusals =
                all.stream().filter(f -> f.get(0).value().endsWith(".refused")).toList();
        assertThat(refusals)
                .containsExactly(
                        List.of(
                                bare("event", "force-release.refused"),
                                text("by", "mallory"),
                                text("key", FORGED_KEY),
                                text("reason", HOSTILE_REASON),
                                text("needsRole", "LEASEHOLD_ADMIN")),
                        List.of(
                                bare("event", "force-release.refused"),
                                text("by", "anonymous"),
                                text("key", longKey.substring(0, 256)),
                                bare("key.truncated", String.valueOf(longKey.length() - 256)),
                                text("reason", "r"),
                                text("needsRole", "LEASEHOLD_ADMIN")),
                        List.of(
                                bare("event", "force-release.refused"),
                                text("by", OperatorApp.FORGING_USER),
                                text("key", held.render()),
                                text("reason", "r"),
                                text("needsRole", "LEASEHOLD_ADMIN")),
                        List.of(
                                bare("event", "lock-mode.refused"),
                                text("by", "mallory"),
                                text("to", forgedMode),
                                text("reason", HOSTILE_REASON),
                                text("needsRole", "LEASEHOLD_ADMIN")));
        assertThat(all)
                .filteredOn(f -> f.get(0).value().equals("force-release"))
                .containsExactly(List.of(
                        bare("event", "force-release"),
                        text("by", "operator"),
                        text("key", held.render()),
                        text("reason", ticket),
                        bare("removed", "true")));
        assertThat(all)
                .filteredOn(f -> f.get(0).value().equals("lock-mode"))
                .containsExactly(List.of(
                        bare("event", "lock-mode"),
                        text("by", "operator"),
                        text("from", "ENFORCE"),
                        text("to", "BYPASS"),
                        text("reason", HOSTILE_REASON)));
        List<Field> forceReleased = all.stream()
                .filter(f -> f.get(0).value().equals("lease.force-released")
                        && f.get(1).value().equals(held.render()))
                .findFirst()
                .orElseThrow();
        assertThat(forceReleased)
                .extracting(Field::name)
                .containsExactly("event", "key", "owner", "fence", "waitMs", "holdMs", "backend", "host", "detail");
        assertThat(forceReleased.get(8)).isEqualTo(text("detail", ticket + " (by operator)"));
    }

    private static Field text(String name, String value) {
        return new Field(name, true, escaped(value), value);
    }

    private static Field bare(String name, String value) {
        return new Field(name, false, value, value);
    }

    /** The escaping the audit format specifies, written out independently of the writer. */
    private static String escaped(String value) {
        StringBuilder out = new StringBuilder();
        for (char c : value.toCharArray()) {
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '"' -> out.append("\\\"");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> out.append(c >= 0x20 && c <= 0x7e ? String.valueOf(c) : String.format("\\u%04x", (int) c));
            }
        }
        return out.toString();
    }

    private static List<String> pairs(ILoggingEvent event) {
        List<KeyValuePair> pairs = event.getKeyValuePairs() == null ? List.of() : event.getKeyValuePairs();
        return pairs.stream().map(p -> p.key + "=" + p.value).toList();
    }

    private int post(String path, String user, Map<String, String> body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
        if (user != null) {
            request.header(
                    "Authorization",
                    "Basic "
                            + Base64.getEncoder()
                                    .encodeToString(
                                            (user + ":" + OperatorApp.PASSWORD).getBytes(StandardCharsets.UTF_8)));
        }
        return CLIENT.send(request.build(), HttpResponse.BodyHandlers.discarding())
                .statusCode();
    }
}
