package dev.leasehold.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import jakarta.servlet.http.HttpServletRequest;
import java.lang.reflect.Method;
import java.security.Principal;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.RequestEntity;
import org.springframework.mock.web.MockHttpServletRequest;

/** The default scope and payload of {@link Idempotent} calls. */
class IdempotentScopesTest {

    @SuppressWarnings("unused")
    static void pay(String account, HttpServletRequest request, Principal principal, HttpHeaders headers) {}

    @SuppressWarnings("unused")
    static void transfer(RequestEntity<String> request) {}

    @Test
    void theTenantAndThePrincipalQualifyTheScope() {
        assertThat(IdempotentScopes.scope("Payments.pay", null, null)).isEqualTo("Payments.pay");
        assertThat(IdempotentScopes.scope("Payments.pay", null, "alice")).isEqualTo("Payments.pay|user:alice");
        assertThat(IdempotentScopes.scope("Payments.pay", "acme", "alice"))
                .isEqualTo("Payments.pay|tenant:acme|user:alice");
        assertThat(IdempotentScopes.scope("Payments.pay", null, "alice"))
                .isNotEqualTo(IdempotentScopes.scope("Payments.pay", null, "bob"));
    }

    @Test
    void aTenantThatSpellsAUserIsNotThatUser() {
        assertThat(IdempotentScopes.scope("Payments.pay", "acme|user:alice", null))
                .isNotEqualTo(IdempotentScopes.scope("Payments.pay", "acme", "alice"));
        assertThat(IdempotentScopes.scope("Payments.pay|tenant:acme", null, "alice"))
                .isNotEqualTo(IdempotentScopes.scope("Payments.pay", "acme", "alice"));
    }

    @Test
    void theDefaultPayloadLeavesOutWebInfrastructureAndKeepsARequestEntitysBody() throws Exception {
        Method pay = getClass()
                .getDeclaredMethod("pay", String.class, HttpServletRequest.class, Principal.class, HttpHeaders.class);
        MockHttpServletRequest request = new MockHttpServletRequest();
        Principal principal = () -> "alice";

        assertThat(IdempotentScopes.payload(pay, new Object[] {"A1", request, principal, new HttpHeaders()}))
                .containsExactly("A1");

        Method transfer = getClass().getDeclaredMethod("transfer", RequestEntity.class);
        RequestEntity<String> entity = RequestEntity.post("/t").body("{\"amount\":1}");
        assertThat(IdempotentScopes.payload(transfer, new Object[] {entity})).isEqualTo(List.of("{\"amount\":1}"));
    }
}
