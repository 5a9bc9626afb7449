package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LeaseOptionsTest {

    @Test
    void defaultsLeaseThirtySecondsRenewedWithoutWaiting() {
        LeaseOptions options = LeaseOptions.defaults();
        assertThat(options.leaseFor()).isEqualTo(Duration.ofSeconds(30));
        assertThat(options.waitFor()).isZero();
        assertThat(options.renewal()).isTrue();
    }

    @Test
    void badValuesAreRejectedWithTheValueInTheMessage() {
        assertThatThrownBy(() -> LeaseOptions.builder().leaseFor(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseFor")
                .hasMessageContaining("was PT0S");
        assertThatThrownBy(() -> LeaseOptions.builder().leaseFor(Duration.ofMillis(-1)))
                .hasMessageContaining("was PT-0.001S");
        assertThatThrownBy(() -> LeaseOptions.builder().waitFor(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("waitFor")
                .hasMessageContaining("was PT-1S");
        assertThatThrownBy(() -> LeaseOptions.builder().waitFor(Duration.ofDays(2)))
                .hasMessageContaining("was PT48H");
        assertThatThrownBy(() -> LeaseOptions.builder().leaseFor(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("leaseFor");
    }

    @Test
    void withWaitKeepsTheRest() {
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(Duration.ofSeconds(5))
                .renewal(false)
                .build()
                .withWait(Duration.ofSeconds(3));
        assertThat(options.leaseFor()).isEqualTo(Duration.ofSeconds(5));
        assertThat(options.waitFor()).isEqualTo(Duration.ofSeconds(3));
        assertThat(options.renewal()).isFalse();
        assertThat(options).isEqualTo(options.toBuilder().build());
    }
}
