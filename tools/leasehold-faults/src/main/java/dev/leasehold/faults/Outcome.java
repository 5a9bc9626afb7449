package dev.leasehold.faults;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * What one scenario on one backend came to: one row of the report.
 *
 * @param scenario the scenario's title, such as {@code 1 paused holder}
 * @param backend where it ran, such as {@code redis} or {@code postgresql}
 * @param status whether it ran, and if not why
 * @param operations the operations done under the fault (rounds, grants, requests)
 * @param canaryViolations violations of the unprotected canary: more than zero proves the fault
 *     was real
 * @param protectedViolations violations of the protected path: must be zero
 * @param longestStall the longest a protected operation took or was blocked
 * @param details what the violations were (the first few) and other figures
 * @param faults faults injected, where the scenario counts them (else -1)
 * @param checker the history checker's verdict, where the scenario records a history (else
 *     {@code -})
 */
public record Outcome(
        String scenario,
        String backend,
        Status status,
        int operations,
        int canaryViolations,
        int protectedViolations,
        Duration longestStall,
        List<String> details,
        int faults,
        String checker) {

    /** Whether the scenario ran, and if not, why. */
    public enum Status {
        /** It ran. */
        RAN,
        /** A tool it needs (such as faketime) is not installed. */
        TOOL_ABSENT,
        /** A service it needs (a database) is not reachable. */
        SERVICE_ABSENT
    }

    /** Checks the fields. */
    public Outcome {
        Objects.requireNonNull(scenario, "scenario");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(longestStall, "longestStall");
        details = List.copyOf(details);
        Objects.requireNonNull(checker, "checker");
    }

    /** A row without a history: faults not counted, no checker verdict. */
    public Outcome(
            String scenario,
            String backend,
            Status status,
            int operations,
            int canaryViolations,
            int protectedViolations,
            Duration longestStall,
            List<String> details) {
        this(
                scenario,
                backend,
                status,
                operations,
                canaryViolations,
                protectedViolations,
                longestStall,
                details,
                -1,
                "-");
    }

    /** A scenario that could not run because {@code what} is missing. */
    public static Outcome absent(String scenario, String backend, Status status, String what) {
        return new Outcome(scenario, backend, status, 0, 0, 0, Duration.ZERO, List.of(what));
    }

    /** Whether the scenario ran, its canary saw the fault, and the protected path saw none. */
    public boolean passed() {
        return status == Status.RAN && canaryViolations > 0 && protectedViolations == 0;
    }

    /** The verdict as the report prints it. */
    public String verdict() {
        return switch (status) {
            case TOOL_ABSENT -> "tool absent";
            case SERVICE_ABSENT -> "service absent";
            case RAN -> {
                if (protectedViolations > 0) {
                    yield "FAIL: protected path violated";
                }
                yield canaryViolations > 0 ? "pass" : "FAIL: canary saw no fault";
            }
        };
    }
}
