package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LockOwnerTest {

    @Test
    void randomTokensAreUniqueAndNeverPrintedWhole() {
        Set<String> tokens = new HashSet<>();
        for (int i = 0; i < 1000; i++) {
            LockOwner owner = LockOwner.create("job");
            assertThat(owner.token()).hasSize(32);
            assertThat(owner.toString()).doesNotContain(owner.token());
            tokens.add(owner.token());
        }
        assertThat(tokens).hasSize(1000);
    }

    @Test
    void ownersWithTheSameTokenAreTheSameOwner() {
        assertThat(LockOwner.withToken("request-0123456789", "a"))
                .isEqualTo(LockOwner.withToken("request-0123456789", "b"));
    }

    @Test
    void malformedTokensAreRejected() {
        assertThatThrownBy(() -> LockOwner.withToken("short", "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("5 characters");
        assertThatThrownBy(() -> LockOwner.withToken("has spaces in the token", "x"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LockOwner.withToken(null, "x")).hasMessageContaining("null");
    }
}
