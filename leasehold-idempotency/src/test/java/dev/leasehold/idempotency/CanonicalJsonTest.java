package dev.leasehold.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
}
