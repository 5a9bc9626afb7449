package dev.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.LockKey;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class WaiterPolicyTest {

    private static final LockKey KEY = LockKey.of("policy", "k");
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration BOUND = Duration.ofMillis(50);

    private static AcquireRequest waiter(Duration refusedFor) {
        return AcquireRequest.waiting(KEY, "owner", LEASE, refusedFor);
    }

    @Test
    void aSingleTryNeverTakesAPlaceInEitherMode() {
        AcquireRequest once = AcquireRequest.once(KEY, "owner", LEASE);
        for (WaiterPolicy policy : new WaiterPolicy[] {WaiterPolicy.fairQueue(), WaiterPolicy.bargingFor(BOUND)}) {
            assertThat(policy.takesPlace(once)).isFalse();
            assertThat(policy.untilPlace(once)).isZero();
        }
    }

    @Test
    void inTheFairModeAWaiterTakesItsPlaceAtItsFirstRefusal() {
        WaiterPolicy fair = WaiterPolicy.fairQueue();
        assertThat(fair.takesPlace(waiter(null))).isTrue();
        assertThat(fair.takesPlace(waiter(Duration.ZERO))).isTrue();
        assertThat(fair.untilPlace(waiter(null))).isZero();
    }

    @Test
    void withBoundedBargingAWaiterTakesItsPlaceOnceRefusedForTheBound() {
        WaiterPolicy barging = WaiterPolicy.bargingFor(BOUND);
        assertThat(barging.takesPlace(waiter(null))).isFalse();
        assertThat(barging.untilPlace(waiter(null))).isEqualTo(BOUND);
        assertThat(barging.takesPlace(waiter(Duration.ofMillis(49)))).isFalse();
        assertThat(barging.untilPlace(waiter(Duration.ofMillis(49)))).isEqualTo(Duration.ofMillis(1));
        assertThat(barging.takesPlace(waiter(BOUND))).isTrue();
        assertThat(barging.untilPlace(waiter(BOUND))).isZero();
        assertThat(barging.takesPlace(waiter(Duration.ofSeconds(5)))).isTrue();
    }

    @Test
    void aNegativeBoundIsRefusedNamingIt() {
        assertThatThrownBy(() -> WaiterPolicy.bargingFor(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT-0.001S");
    }
}
