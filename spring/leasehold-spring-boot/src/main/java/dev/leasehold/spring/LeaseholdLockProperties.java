package dev.leasehold.spring;

import java.time.Duration;
import org.springframework.validation.Errors;

/** Lock defaults. */
public class LeaseholdLockProperties {
    /** Default lease time of {@code @Locked} methods (renewed while the method runs). */
    private Duration leaseTime = Duration.ofSeconds(30);
    /** Default time {@code @Locked} methods wait for a busy key; 0 answers busy at once. */
    private Duration waitTime = Duration.ZERO;
    /** enforce, or bypass to rely on the database safety net alone; changeable at runtime. */
    private LeaseholdProperties.Mode mode = LeaseholdProperties.Mode.ENFORCE;
    /** Whether waiters in one JVM are served in arrival order. */
    private boolean fair = true;
    /**
     * Order of the {@code @Locked} advisor (default {@code Ordered.HIGHEST_PRECEDENCE + 200}); it must
     * run before (be lower than) the transaction advisor's, which startup checks.
     */
    private int advisorOrder = LeaseholdAutoConfiguration.LOCKED_ORDER;

    public int getAdvisorOrder() {
        return advisorOrder;
    }

    public void setAdvisorOrder(int advisorOrder) {
        this.advisorOrder = advisorOrder;
    }

    public Duration getLeaseTime() {
        return leaseTime;
    }

    public void setLeaseTime(Duration leaseTime) {
        this.leaseTime = leaseTime;
    }

    public Duration getWaitTime() {
        return waitTime;
    }

    public void setWaitTime(Duration waitTime) {
        this.waitTime = waitTime;
    }

    public LeaseholdProperties.Mode getMode() {
        return mode;
    }

    public void setMode(LeaseholdProperties.Mode mode) {
        this.mode = mode;
    }

    public boolean isFair() {
        return fair;
    }

    public void setFair(boolean fair) {
        this.fair = fair;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        LeaseholdProperties.positive(errors, "lock.lease-time", leaseTime);
        LeaseholdProperties.notNegative(errors, "lock.wait-time", waitTime);
    }
}
