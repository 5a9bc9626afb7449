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
                new RequestScope("Payments.pay", "acme|user:alice", null),
                new RequestScope("Payments.pay|tenant:acme", null, "alice"),
                new RequestScope("Payments.pay|tenant:acme|user:alice", null, null),
                new RequestScope("Payments.pay", null, "acme|user:alice"),
                new RequestScope("Payments.pay", "acme\\", "alice"),
                new RequestScope("Payments.pay", "acme\\|user:alice", null),
                new RequestScope("Payments.pay", "user:alice", null),
                new RequestScope("Payments.pay", null, "alice"));
        Set<String> texts = new HashSet<>();
        for (RequestScope scope : scopes) {
            assertThat(texts.add(scope.text()))
                    .as("%s is a text of its own", scope)
                    .isTrue();
        }
        assertThat(new RequestScope("Payments.pay", "acme|user:alice", null).text())
                .isEqualTo("Payments.pay|tenant:acme\\|user:alice");
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
    void plainPartsAreStoredAsTheyAre() {
        assertThat(new RequestScope("Payments.pay", null, null).text()).isEqualTo("Payments.pay");
        assertThat(new RequestScope("Payments.pay", "", "alice").text()).isEqualTo("Payments.pay|user:alice");
        assertThat(new RequestScope("Payments.pay", "acme", "alice").text())
                .isEqualTo("Payments.pay|tenant:acme|user:alice");
    }

    @Test
    void noScopeWithATenantOrAPrincipalHasTheTextOnceStoredForIt() {
        // Stored before scopes were structured by a guest whose tenant header spelled alice.
        String forged = joinedAsOnceStored("Payments.pay", "acme|user=alice", null);
        assertThat(forged).isEqualTo("Payments.pay|tenant=acme|user=alice");
        assertThat(new RequestScope("Payments.pay", "acme", "alice").text()).isNotEqualTo(forged);

        List<String> tenants = List.of("", "t", "acme|user=alice", "acme-" + "x".repeat(140));
        List<String> principals = new java.util.ArrayList<>(List.of("alice", "bob-" + "y".repeat(150)));
        principals.add(null);
        for (int length = 1; length <= 200; length++) {
            String base = ("P\uD83D\uDE00ay.ments-" + "b".repeat(200)).substring(0, length);
            if (Character.isHighSurrogate(base.charAt(base.length() - 1))) {
                continue;
            }
            for (String tenant : tenants) {
                for (String principal : principals) {
                    String text = new RequestScope(base, tenant, principal).text();
                    String once = joinedAsOnceStored(base, tenant, principal);
                    if (tenant.isEmpty() && principal == null) {
                        assertThat(text).as("a base alone keeps its text").isEqualTo(once);
                    } else {
                        assertThat(text)
                                .as("base of %d characters, tenant %s, principal %s", length, tenant, principal)
                                .isNotEqualTo(once);
                    }
                }
            }
        }
    }

    /** The scope text as it was stored when scopes were joined text, the parts as sent. */
    private static String joinedAsOnceStored(String base, String tenant, String principal) {
        StringBuilder scope = new StringBuilder(base);
        if (tenant != null && !tenant.isEmpty()) {
            scope.append("|tenant=").append(tenant);
        }
        if (principal != null) {
            scope.append("|user=").append(principal);
        }
        String full = scope.toString();
        if (full.length() <= 128) {
            return full;
        }
        String hash = CanonicalJson.sha256(full);
        String start = full.substring(0, 128 - hash.length() - 1);
        if (Character.isHighSurrogate(start.charAt(start.length() - 1))) {
            start = start.substring(0, start.length() - 1);
        }
        return start + "#" + hash;
    }

    @Test
    void aLongScopeIsShortenedWithTheHashOfTheWhole() {
        String alice = new RequestScope("Payments.pay", "t", "alice-" + "x".repeat(200)).text();
        String bob = new RequestScope("Payments.pay", "t", "bob-" + "x".repeat(200)).text();

        assertThat(alice)
                .hasSizeLessThanOrEqualTo(RequestScope.MAX_LENGTH)
                .startsWith("Payments.pay|tenant:t|user:alice");
        assertThat(bob).hasSizeLessThanOrEqualTo(RequestScope.MAX_LENGTH);
        assertThat(alice).isNotEqualTo(bob);
    }

    @Test
    void noScopeCanImitateTheShortenedFormOfAnother() {
        // A victim whose tenant is long is stored shortened; an attacker who knows the victim's
        // parts can compute the same start and hash, and offers them as a tenant of their own.
        RequestScope victim = new RequestScope("Payments.pay", "t".repeat(150), "alice");
        String shortened = victim.text();
        String forgedTenant = shortened.substring("Payments.pay|tenant:".length());
        RequestScope attacker = new RequestScope("Payments.pay", forgedTenant, null);

        assertThat(shortened).hasSize(RequestScope.MAX_LENGTH);
        assertThat(attacker.text()).isNotEqualTo(shortened);
    }

    @Test
    void noScopeCanImitateAShortenedFormWhereverItIsSplitIntoParts() {
        RequestScope victim = new RequestScope("P".repeat(49), "t", "bob-" + "y".repeat(150));
        String shortened = victim.text();
        assertThat(shortened)
                .as("cut before the part that does not fit, never inside a separator")
                .startsWith("P".repeat(49) + "|tenant:t#");

        for (int at = 1; at < shortened.length(); at++) {
            String head = shortened.substring(0, at);
            String tail = shortened.substring(at);
            for (RequestScope attacker : List.of(
                    new RequestScope(shortened, null, null),
                    new RequestScope(head, tail, null),
                    new RequestScope(head, null, tail),
                    new RequestScope("P".repeat(49), tail, null),
                    new RequestScope("P".repeat(49), "t", tail))) {
                assertThat(attacker.text()).as("%s", attacker).isNotEqualTo(shortened);
            }
        }
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

        assertThat(text).isEqualTo("Payments.pay|user:al\\u0009ice\\uD800");
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
