package dev.leasehold.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The stored form of a request scope: one text per structured value, and never another's. */
class RequestScopeTest {

    @Test
    void noPartCanImitateAnother() {
        List<RequestScope> scopes = List.of(
                new RequestScope("Payments.pay", "acme", "alice"),
                new RequestScope("Payments.pay", "acme|user=alice", null),
                new RequestScope("Payments.pay|tenant=acme", null, "alice"),
                new RequestScope("Payments.pay|tenant=acme|user=alice", null, null),
                new RequestScope("Payments.pay", null, "acme|user=alice"),
                new RequestScope("Payments.pay", "acme\\", "alice"),
                new RequestScope("Payments.pay", "acme\\|user=alice", null),
                new RequestScope("Payments.pay", "user=alice", null),
                new RequestScope("Payments.pay", null, "alice"));
        Set<String> texts = new HashSet<>();
        for (RequestScope scope : scopes) {
            assertThat(texts.add(scope.text()))
                    .as("%s is a text of its own", scope)
                    .isTrue();
        }
        assertThat(new RequestScope("Payments.pay", "acme|user=alice", null).text())
                .isEqualTo("Payments.pay|tenant=acme\\|user=alice");
    }

    @Test
    void aCallerWithAPrincipalNeverSharesAScopeWithOneWithout() {
        assertThat(new RequestScope("Payments.pay", null, null).text())
                .isNotEqualTo(new RequestScope("Payments.pay", null, "").text())
                .isNotEqualTo(new RequestScope("Payments.pay", null, "alice").text());
        assertThat(new RequestScope("Payments.pay", "acme", null).text())
                .isNotEqualTo(new RequestScope("Payments.pay", "acme", "alice").text());
    }

    @Test
    void plainPartsGiveTheTextStoredBeforeEscaping() {
        assertThat(new RequestScope("Payments.pay", null, null).text()).isEqualTo("Payments.pay");
        assertThat(new RequestScope("Payments.pay", "", "alice").text()).isEqualTo("Payments.pay|user=alice");
        assertThat(new RequestScope("Payments.pay", "acme", "alice").text())
                .isEqualTo("Payments.pay|tenant=acme|user=alice");
        String longUser = "alice-" + "x".repeat(200);
        String before = "Payments.pay|tenant=t|user=" + longUser;
        assertThat(new RequestScope("Payments.pay", "t", longUser).text())
                .isEqualTo(before.substring(0, 63) + "#" + CanonicalJson.sha256(before));
    }

    @Test
    void aLongScopeIsShortenedWithTheHashOfTheWhole() {
        String alice = new RequestScope("Payments.pay", "t", "alice-" + "x".repeat(200)).text();
        String bob = new RequestScope("Payments.pay", "t", "bob-" + "x".repeat(200)).text();

        assertThat(alice)
                .hasSizeLessThanOrEqualTo(RequestScope.MAX_LENGTH)
                .startsWith("Payments.pay|tenant=t|user=alice");
        assertThat(bob).hasSizeLessThanOrEqualTo(RequestScope.MAX_LENGTH);
        assertThat(alice).isNotEqualTo(bob);
    }

    @Test
    void noScopeCanImitateTheShortenedFormOfAnother() {
        // A victim whose tenant is long is stored shortened; an attacker who knows the victim's
        // parts can compute the same start and hash, and offers them as a tenant of their own.
        RequestScope victim = new RequestScope("Payments.pay", "t".repeat(150), "alice");
        String shortened = victim.text();
        String forgedTenant = shortened.substring("Payments.pay|tenant=".length());
        RequestScope attacker = new RequestScope("Payments.pay", forgedTenant, null);

        assertThat(shortened).hasSize(RequestScope.MAX_LENGTH);
        assertThat(attacker.text()).isNotEqualTo(shortened);
    }

    @Test
    void aShortenedScopeIsNeverCutInsideAnEscapeOrASurrogatePair() {
        for (int pad = 0; pad < 4; pad++) {
            String tenant = "a".repeat(pad) + "|\t\uD83D\uDE00".repeat(40);
            String text = new RequestScope("Payments.pay", tenant, "alice").text();
            String start = text.substring(0, text.length() - 65);

            assertThat(text).hasSizeLessThanOrEqualTo(RequestScope.MAX_LENGTH);
            assertThat(text.charAt(text.length() - 65)).isEqualTo('#');
            assertThat(Character.isHighSurrogate(start.charAt(start.length() - 1)))
                    .isFalse();
            assertThat(start).doesNotEndWith("\\").doesNotEndWith("\\u0").doesNotEndWith("\\u00");
        }
    }

    @Test
    void controlCharactersAndUnpairedSurrogatesAreEscapedSoTheTextCanBeStored() {
        String text = new RequestScope("Payments.pay", null, "al\tice\uD800").text();

        assertThat(text).isEqualTo("Payments.pay|user=al\\u0009ice\\uD800");
        assertThat(text.chars().noneMatch(Character::isISOControl)).isTrue();
        assertThat(CanonicalJson.sha256(text)).hasSize(64);
    }

    @Test
    void aBlankBaseIsRefused() {
        assertThatThrownBy(() -> new RequestScope(" ", "acme", "alice"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("base is blank");
    }
}
