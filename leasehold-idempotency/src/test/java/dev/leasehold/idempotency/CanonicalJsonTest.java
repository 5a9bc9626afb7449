package dev.leasehold.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CanonicalJsonTest {

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"b\":1,\"a\":2}                        | {\"a\":2,\"b\":1}",
                "{ \"z\" : { \"y\":1, \"x\":[ {\"d\":1,\"c\":2} ] } } | {\"z\":{\"x\":[{\"c\":2,\"d\":1}],\"y\":1}}",
                "35                                     | 35",
                "35.0                                   | 35",
                "3.5E1                                  | 35",
                "350e-1                                 | 35",
                "3500                                   | 35e2",
                "0.50                                   | 5e-1",
                "-0.0                                   | 0",
                "0                                      | 0",
                "-12.340                                | -1234e-2",
                "1e400                                  | 1e400",
                "123456789012345678901234567890         | 12345678901234567890123456789e1",
                "\"35\"                                 | \"35\"",
                "\"Caf\\u00e9\"                          | \"Café\"",
                "[3,1,2]                                | [3,1,2]",
                "[true,false,null]                      | [true,false,null]",
                "{\"amount\":35,\"note\":\"中午吃粉\"}     | {\"amount\":35,\"note\":\"中午吃粉\"}",
            })
    void canonicalForm(String json, String canonical) {
        assertThat(CanonicalJson.canonicalize(json)).isEqualTo(canonical);
    }

    @ParameterizedTest(name = "{0} hashes like {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"a\":1,\"b\":{\"c\":35}}   | {\"b\":{\"c\":3.5e1},\"a\":1.00}",
                "[{\"x\":35.0}]               | [ { \"x\" : 35 } ]",
                "{\"amount\":35}              | {\"amount\":350E-1}",
            })
    void sameMeaningSameFingerprint(String one, String other) {
        assertThat(CanonicalJson.fingerprint(one))
                .isEqualTo(CanonicalJson.fingerprint(other))
                .startsWith("v1:")
                .hasSize(67);
    }

    @ParameterizedTest(name = "{0} differs from {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"amount\":35}     | {\"amount\":\"35\"}",
                "{\"amount\":35}     | {\"amount\":36}",
                "[1,2]               | [2,1]",
                "{\"note\":\"a\"}    | {\"note\":\"a \"}",
                "{\"note\":\"é\"}    | {\"note\":\"e\\u0301\"}",
                "{\"a\":null}        | {}",
            })
    void differentMeaningDifferentFingerprint(String one, String other) {
        assertThat(CanonicalJson.fingerprint(one)).isNotEqualTo(CanonicalJson.fingerprint(other));
    }

    @ParameterizedTest(name = "rejects {0}")
    @ValueSource(strings = {"", "   ", "{", "{\"a\":1} trailing", "{\"a\":1,\"a\":2}", "[1,]", "NaN", "{a:1}"})
    void invalidJsonIsAnErrorNotAHash(String json) {
        assertThatThrownBy(() -> CanonicalJson.fingerprint(json))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("JSON");
    }

    @org.junit.jupiter.api.Test
    void nullIsRejected() {
        assertThatThrownBy(() -> CanonicalJson.canonicalize((String) null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @org.junit.jupiter.api.Test
    void unpairedSurrogatesAreRejectedNotHashedLikeAQuestionMark() {
        for (String json : List.of("\"\\ud800\"", "\"\\udc00x\"", "{\"a\\ud83d\":1}", "\"\ud800\"")) {
            assertThatThrownBy(() -> CanonicalJson.fingerprint(json))
                    .as(json)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("unpaired surrogate");
        }
        assertThatThrownBy(() -> CanonicalJson.sha256("a\uD800b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unpaired surrogate at index 1");
        assertThat(CanonicalJson.fingerprint("\"\\ud83d\\ude00\""))
                .as("a pair is one code point")
                .isEqualTo(CanonicalJson.fingerprint("\"\uD83D\uDE00\""));
    }

    @org.junit.jupiter.api.Test
    void fingerprintSaysWhichRulesMadeIt() {
        assertThat(CanonicalJson.fingerprint("{}"))
                .isEqualTo("v1:" + CanonicalJson.sha256("{}"))
                .matches("v1:[0-9a-f]{64}");
    }

    /** Version 1 is the canonical text fingerprints had before they carried a version. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "{\"b\":[1,2.50,-0.0,1e400,3E-3],\"a\":{\"z\":null,\"y\":true}}",
                "\"tab\\t nl\\n cr\\r bs\\b ff\\f u\\u0001 \\u001f del\\u007f slash\\/ q\\\" bsl\\\\\"",
                "[\"中午吃粉\",\"e\\u0301\",\"\\ud83d\\ude00\",\"\\u2028\"]",
                "-12345678901234567.8900",
            })
    void versionOneTextIsTheTextBeforeVersions(String json) throws Exception {
        assertThat(CanonicalJson.canonicalize(json)).isEqualTo(Jackson2Canonical.canonicalize(json));
    }
}
