package dev.leasehold.spring;

import java.time.Duration;
import org.springframework.validation.Errors;

/** The scan for leases held far beyond their lease time. */
public class LeaseholdStaleScanProperties {
    /** Whether to scan. */
    private boolean enabled = true;
    /** How often to scan. */
    private Duration interval = Duration.ofMinutes(1);
    /** A lease held longer than this many lease times is reported. */
    private int leaseMultiple = 10;

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Duration getInterval() {
        return interval;
    }

    public void setInterval(Duration interval) {
        this.interval = interval;
    }

    public int getLeaseMultiple() {
        return leaseMultiple;
    }

    public void setLeaseMultiple(int leaseMultiple) {
        this.leaseMultiple = leaseMultiple;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        LeaseholdProperties.positive(errors, "stale-scan.interval", interval);
        if (leaseMultiple < 2) {
            errors.reject(
                    "leasehold.stale-scan.lease-multiple",
                    "leasehold.stale-scan.lease-multiple must be >= 2, was " + leaseMultiple);
        }
    }
}
