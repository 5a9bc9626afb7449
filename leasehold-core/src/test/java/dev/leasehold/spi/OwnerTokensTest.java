package dev.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.LockOwner;
import org.junit.jupiter.api.Test;

class OwnerTokensTest {

    @Test
    void tokensOfLockOwnersAndPrintableTextPass() {
        String token = LockOwner.create("t").token();
        assertThat(OwnerTokens.check(token)).isEqualTo(token);
        assertThat(OwnerTokens.check("w1 ")).isEqualTo("w1 ");
        assertThat(OwnerTokens.check("caf\u00e9-\uD83D\uDE00")).isEqualTo("caf\u00e9-\uD83D\uDE00");
        assertThat(OwnerTokens.check("y".repeat(128))).hasSize(128);
    }

    @Test
    void missingBlankLongControlAndUnpairedSurrogateAreRefusedWithWhereItIs() {
        assertThatThrownBy(() -> OwnerTokens.check(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OwnerTokens.check(" ")).hasMessageContaining("blank");
        assertThatThrownBy(() -> OwnerTokens.check("x".repeat(129)))
                .hasMessageContaining("at most 128")
                .hasMessageContaining("129");
        assertThatThrownBy(() -> OwnerTokens.check("ab\u0000c"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("control character (U+0000) at index 2");
        assertThatThrownBy(() -> OwnerTokens.check("a\u0085")).hasMessageContaining("U+0085");
        assertThatThrownBy(() -> OwnerTokens.check("a\uD800"))
                .hasMessageContaining("unpaired surrogate (U+D800) at index 1");
        assertThatThrownBy(() -> OwnerTokens.check("a\uDC00b")).hasMessageContaining("U+DC00");
    }
}
