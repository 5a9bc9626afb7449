package dev.leasehold.it.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.Claim;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.spring.actuator.LeaseholdMetricNames;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The scheduled purge honours {@code leasehold.idempotency.retention}, and the gauges show the
 * records and the oldest PROCESSING one.
 */
@SpringBootTest(
        classes = ShopApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.datasource.url=jdbc:h2:mem:purge;DB_CLOSE_DELAY=-1",
            "leasehold.idempotency.retention=1s",
            "leasehold.idempotency.abandoned-after=3s",
            "leasehold.idempotency.purge.interval=200ms"
        })
class PurgeAndGaugesTest {

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    MeterRegistry meters;

    @Autowired
    RequestRecords records;

    @Autowired
    Ledger ledger;

    private int records(String key) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_request WHERE client_key = ?", Integer.class, key);
    }

    @Test
    void aCompletedRecordIsPurgedAfterTheRetentionAndTheKeyRunsAgain() throws Exception {
        Http http = new Http(port);
        String account = "acct-" + UUID.randomUUID();
        String key = "key-" + UUID.randomUUID();
        String body = "{\"account\":\"" + account + "\",\"amount\":3,\"note\":\"n\"}";
        assertThat(http.post("/payments", "alice", key, body).status()).isEqualTo(201);
        assertThat(records(key)).isEqualTo(1);
        assertThat(http.post("/payments", "alice", key, body).replayed())
                .as("within the retention: a replay")
                .isTrue();

        await().atMost(Duration.ofSeconds(10)).until(() -> records(key) == 0);
        Http.Answer afterRetention = http.post("/payments", "alice", key, body);
        assertThat(afterRetention.replayed())
                .as("the record is gone, so the key is new")
                .isFalse();
        assertThat(ledger.payments(account)).isEqualTo(2);
        assertThat(meters.get(LeaseholdMetricNames.IDEMPOTENCY_PURGED).counter().count())
                .isPositive();
    }

    @Test
    void gaugesShowTheRecordsAndTheOldestProcessingAgeAndAnAbandonedRecordIsPurged() {
        String key = "abandoned-" + UUID.randomUUID();
        Claim claim = records.begin("gauges", key, CanonicalJson.fingerprint("{\"n\":1}"));
        assertThat(claim).isInstanceOf(Claim.Claimed.class);

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            assertThat(meters.get(LeaseholdMetricNames.IDEMPOTENCY_PROCESSING)
                            .gauge()
                            .value())
                    .isGreaterThanOrEqualTo(1);
            assertThat(meters.get(LeaseholdMetricNames.IDEMPOTENCY_RECORDS)
                            .gauge()
                            .value())
                    .isGreaterThanOrEqualTo(1);
            assertThat(meters.get(LeaseholdMetricNames.IDEMPOTENCY_PROCESSING_OLDEST)
                            .gauge()
                            .value())
                    .isGreaterThanOrEqualTo(1.0);
        });
        await().atMost(Duration.ofSeconds(15)).until(() -> records(key) == 0);
    }
}
