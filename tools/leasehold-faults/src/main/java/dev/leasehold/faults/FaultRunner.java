package dev.leasehold.faults;

import java.nio.file.Path;
import java.util.List;
import org.opentest4j.TestAbortedException;

/**
 * Runs every scenario on every backend, prints the table and writes it as Markdown.
 *
 * <pre>
 * java dev.leasehold.faults.FaultRunner [short|long] [report.md] [scenario-number[,number...]...]
 * </pre>
 *
 * Exits with 1 if a scenario failed (a canary that saw no fault, or a protected violation), so a
 * build that runs it fails too. A scenario whose tool or service is missing says so in its row.
 */
public final class FaultRunner {

    private FaultRunner() {}

    public static void main(String[] args) throws Exception {
        Profile profile = Profile.parse(args.length > 0 ? args[0] : "short");
        Path file = Path.of(args.length > 1 ? args[1] : "docs/faults/latest.md");
        // scenario numbers, each its own argument or several in one separated by commas
        List<String> only = args.length > 2
                ? List.of(args).subList(2, args.length).stream()
                        .flatMap(arg -> java.util.Arrays.stream(arg.split(",")))
                        .map(String::trim)
                        .filter(number -> !number.isEmpty())
                        .toList()
                : List.of();
        Report report = new Report();
        for (Scenario scenario : Scenario.all()) {
            if (!only.isEmpty() && !only.contains(scenario.title().split(" ")[0])) {
                continue;
            }
            for (String backend : scenario.backends()) {
                report.add(runOne(scenario, backend, profile));
            }
        }
        report.write(file, profile);
        System.out.println();
        System.out.println(report.markdown(profile));
        System.out.println("[faults] written to " + file.toAbsolutePath());
        boolean failed = report.outcomes().stream().anyMatch(o -> o.status() == Outcome.Status.RAN && !o.passed());
        System.exit(failed ? 1 : 0);
    }

    /** One scenario on one backend; a missing service or a crash of the scenario becomes its row. */
    static Outcome runOne(Scenario scenario, String backend, Profile profile) {
        long start = System.nanoTime();
        try {
            Outcome outcome = scenario.run(backend, profile);
            System.out.printf(
                    "[faults] %s on %s took %d s%n",
                    scenario.title(), backend, (System.nanoTime() - start) / 1_000_000_000L);
            return outcome;
        } catch (TestAbortedException e) {
            return Outcome.absent(scenario.title(), backend, Outcome.Status.SERVICE_ABSENT, e.getMessage());
        } catch (Exception | AssertionError e) {
            e.printStackTrace();
            return new Outcome(
                    scenario.title(),
                    backend,
                    Outcome.Status.RAN,
                    0,
                    0,
                    1,
                    java.time.Duration.ZERO,
                    List.of("VIOLATION: the scenario itself failed: " + e));
        }
    }
}
