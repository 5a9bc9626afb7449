package dev.leasehold.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The audit line format: quoting, escaping, bounds and field names. */
class AuditLineTest {

    @Test
    void textIsQuotedAndEscapedNumbersAndFlagsAreBare() {
        AuditLine line = AuditLine.of("force-release")
                .text("by", "a\"b\\c\nd\re\tf\u0000g\u00e9\u2028h")
                .text("reason", null)
                .number("fence", 7)
                .flag("removed", true);
        assertThat(line.toString())
                .isEqualTo("event=force-release by=\"a\\\"b\\\\c\\nd\\re\\tf\\u0000g\\u00e9\\u2028h\" reason=null"
                        + " fence=7 removed=true");
        assertThat(line.data().keySet()).containsExactly("by", "reason", "fence", "removed");
        assertThat(line.data().values())
                .containsExactly("a\\\"b\\\\c\\nd\\re\\tf\\u0000g\\u00e9\\u2028h", null, 7L, true);
    }

    @Test
    void aLongValueKeepsItsFirstCharactersAndSaysHowManyWereCutWithoutSplittingAPair() {
        String emoji = "\ud83d\ude00";
        String value = "k".repeat(AuditLine.MAX - 1) + emoji + "tail";
        String line = AuditLine.of("lease.stale").text("key", value).toString();
        assertThat(line)
                .isEqualTo("event=lease.stale key=\"" + "k".repeat(AuditLine.MAX - 1) + "\" key.truncated="
                        + (value.length() - (AuditLine.MAX - 1)));
    }

    @Test
    void namesAreCheckedSoNoFieldCanBeMadeFromText() {
        assertThatThrownBy(() -> AuditLine.of("x by=admin")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> AuditLine.of("ok").text("key=\"x\" by", "v"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
