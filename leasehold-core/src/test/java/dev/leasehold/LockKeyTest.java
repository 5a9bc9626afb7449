package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LockKeyTest {

    @Test
    void rendersNamespaceTenantAndIdsOnce() {
        LockKey key = LockKey.ofTenant("borrow", "t42", "B20240315001");
        assertThat(key.render()).isEqualTo("borrow:t42:B20240315001");
        assertThat(key.namespace()).isEqualTo("borrow");
        assertThat(key.tenant()).isEqualTo("t42");
        assertThat(key.ids()).containsExactly("B20240315001");
        assertThat(LockKey.of("session", "s-1", "part")).hasToString("session:s-1:part");
    }

    @Test
    void unicodeIdsAreAccepted() {
        assertThat(LockKey.ofTenant("借据", "租户", "B1").render()).isEqualTo("借据:租户:B1");
    }

    @Test
    void missingPartsAreErrorsNamingThePart() {
        assertThatThrownBy(() -> LockKey.ofTenant("borrow", null, "B1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tenant")
                .hasMessageContaining("null");
        assertThatThrownBy(() -> LockKey.of("borrow", "B1", " "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("id[1]")
                .hasMessageContaining("blank");
        assertThatThrownBy(() -> LockKey.of("", "B1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("namespace");
        assertThatThrownBy(() -> LockKey.of("borrow"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one id");
        assertThatThrownBy(() -> LockKey.of("borrow", (String[]) null)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"B\u0000", "B\n1", "B 1", "B:1", "B{1}", "\u2028x"})
    void malformedPartsAreRejected(String id) {
        assertThatThrownBy(() -> LockKey.of("borrow", id))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("id[0]");
    }

    @Test
    void controlCharactersAreShownEscapedInTheMessage() {
        assertThatThrownBy(() -> LockKey.of("borrow", "B\u00071"))
                .hasMessageContaining("\\u0007")
                .hasMessageContaining("index 1");
    }

    @Test
    void overLongKeysAreRejected() {
        String id = "x".repeat(LockKey.MAX_LENGTH);
        assertThatThrownBy(() -> LockKey.of("borrow", id))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit is " + LockKey.MAX_LENGTH);
        assertThat(LockKey.of("b", "x".repeat(LockKey.MAX_LENGTH - 2)).render()).hasSize(LockKey.MAX_LENGTH);
    }

    @Test
    void identityAndOrderAreTheRenderedKey() {
        LockKey parsed = LockKey.parse("borrow:t42:B1");
        assertThat(parsed).isEqualTo(LockKey.ofTenant("borrow", "t42", "B1"));
        assertThat(parsed.hashCode())
                .isEqualTo(LockKey.ofTenant("borrow", "t42", "B1").hashCode());
        List<LockKey> sorted = List.of(LockKey.of("a", "2"), LockKey.of("a", "10"), LockKey.of("a", "1")).stream()
                .sorted()
                .toList();
        assertThat(sorted).extracting(LockKey::render).containsExactly("a:1", "a:10", "a:2");
        assertThatThrownBy(() -> LockKey.parse("nocolon")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LockKey.parse("a::b")).hasMessageContaining("id[0]");
    }

    @Test
    void aHashTagIsOneIdPartRenderedInBracesAndPartOfTheIdentity() {
        LockKey loan = LockKey.ofTenant("loan", "t42", "B7", "L1").withHashTag(0);
        assertThat(loan.render()).isEqualTo("loan:t42:{B7}:L1");
        assertThat(loan.hashTag()).contains("B7");
        assertThat(loan.ids()).containsExactly("B7", "L1");
        assertThat(loan.tenant()).isEqualTo("t42");
        assertThat(LockKey.ofTenant("loan", "t42", "B7", "L1").hashTag()).isEmpty();
        assertThat(loan)
                .as("the tag is part of the identity")
                .isNotEqualTo(LockKey.ofTenant("loan", "t42", "B7", "L1"));
        assertThat(LockKey.of("borrower", "B7").withHashTag(0).render()).isEqualTo("borrower:{B7}");
    }

    @Test
    void aRenderedHashTagIsReadBack() {
        LockKey parsed = LockKey.parse("loan:t42:{B7}:L1");
        assertThat(parsed).isEqualTo(LockKey.ofTenant("loan", "t42", "B7", "L1").withHashTag(0));
        assertThat(parsed.hashTag()).contains("B7");
        assertThat(parsed.render()).isEqualTo("loan:t42:{B7}:L1");
        assertThatThrownBy(() -> LockKey.parse("loan:{t42}:{B7}:L1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("more than one hash tag");
        assertThatThrownBy(() -> LockKey.parse("{loan}:B7"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("namespace");
        assertThatThrownBy(() -> LockKey.parse("loan:{}:B7"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("id[0]");
    }

    @Test
    void aHashTagMustNameAnIdPart() {
        LockKey key = LockKey.ofTenant("loan", "t42", "B7", "L1");
        assertThatThrownBy(() -> key.withHashTag(2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("hash tag index 2")
                .hasMessageContaining("0 to 1");
        assertThatThrownBy(() -> key.withHashTag(-1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theBracesOfATagCountTowardsTheLengthLimit() {
        String id = "x".repeat(LockKey.MAX_LENGTH - 2);
        LockKey key = LockKey.of("b", id);
        assertThat(key.render()).hasSize(LockKey.MAX_LENGTH);
        assertThatThrownBy(() -> key.withHashTag(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit is " + LockKey.MAX_LENGTH);
    }
}
