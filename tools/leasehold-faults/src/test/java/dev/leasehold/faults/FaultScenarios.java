package dev.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.opentest4j.TestAbortedException;

/**
 * Runs a scenario for a JUnit test with the JVM's profile (short in {@code mvn verify}), adds its
 * row to the report in {@code target/faults/latest.md}, and asserts the two invariants of every
 * scenario: the canary saw the fault, the protected path saw none.
 */
final class FaultScenarios {

    static final Path REPORT = Path.of("target", "faults", "latest.md");

    private FaultScenarios() {}

    static Outcome runAndCheck(Scenario scenario, String backend) throws Exception {
        Outcome outcome;
        try {
            outcome = scenario.run(backend, Profile.current());
        } catch (TestAbortedException e) {
            Report.jvm().add(Outcome.absent(scenario.title(), backend, Outcome.Status.SERVICE_ABSENT, e.getMessage()));
            writeReport();
            throw e;
        }
        Report.jvm().add(outcome);
        writeReport();
        if (outcome.status() == Outcome.Status.TOOL_ABSENT) {
            Assumptions.abort(scenario.title() + " on " + backend + ": tool absent: " + outcome.details());
        }
        assertThat(outcome.protectedViolations())
                .as("%s on %s: protected violations %s", scenario.title(), backend, outcome.details())
                .isZero();
        assertThat(outcome.canaryViolations())
                .as(
                        "%s on %s: the canary must show the fault (else it did not happen): %s",
                        scenario.title(), backend, outcome.details())
                .isPositive();
        assertThat(outcome.operations()).as("operations under the fault").isPositive();
        return outcome;
    }

    private static void writeReport() throws IOException {
        Report.jvm().write(REPORT, Profile.current());
    }
}
