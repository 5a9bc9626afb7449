package dev.leasehold.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;

/** What a request body as received counts as in the fingerprint. */
class IdempotentRequestBodiesTest {

    private static String json(String body, MediaType type) {
        return new IdempotentRequestBodies.Received(0, body.getBytes(StandardCharsets.UTF_8), type).json();
    }

    @Test
    void aJsonBodyCountsAsItsCanonicalText() {
        assertThat(json("{ \"b\": 500.00, \"a\": \"x\" }", MediaType.APPLICATION_JSON))
                .isEqualTo("{\"a\":\"x\",\"b\":5e2}")
                .isNotEqualTo(json("{\"a\":\"x\",\"b\":5.00}", MediaType.APPLICATION_JSON));
    }

    @Test
    void otherBodiesCountByTheirExactBytes() {
        String text = json("amount=5.00", MediaType.TEXT_PLAIN);
        String duplicateKeys = json("{\"a\":1,\"a\":2}", MediaType.APPLICATION_JSON);
        byte[] badUtf8 = {'"', (byte) 0xC3, '"'};
        String malformed = new IdempotentRequestBodies.Received(0, badUtf8, MediaType.APPLICATION_JSON).json();

        assertThat(text).startsWith("{\"body-sha256\":\"").isNotEqualTo(json("amount=500.00", MediaType.TEXT_PLAIN));
        assertThat(duplicateKeys)
                .startsWith("{\"body-sha256\":\"")
                .isNotEqualTo(json("{\"a\":2,\"a\":1}", MediaType.APPLICATION_JSON));
        assertThat(malformed).startsWith("{\"body-sha256\":\"");
    }
}
