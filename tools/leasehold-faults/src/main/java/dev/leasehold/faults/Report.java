package dev.leasehold.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The fault report: one row per scenario and backend, as a Markdown table, followed by what each
 * row's violations were. Rows are collected from every scenario run in this JVM. Thread-safe.
 */
public final class Report {

    private static final Report JVM = new Report();

    private final List<Outcome> outcomes = new ArrayList<>();

    /** The report collecting every outcome of this JVM (the JUnit classes share it). */
    public static Report jvm() {
        return JVM;
    }

    /** Adds a row, and prints it at once. */
    public synchronized void add(Outcome outcome) {
        outcomes.add(outcome);
        System.out.println("[faults] " + row(outcome));
        outcome.details().forEach(d -> System.out.println("[faults]     " + d));
    }

    /** The rows so far. */
    public synchronized List<Outcome> outcomes() {
        return List.copyOf(outcomes);
    }

    /** The report as Markdown. */
    public synchronized String markdown(Profile profile) {
        List<Outcome> sorted = new ArrayList<>(outcomes);
        sorted.sort(Comparator.comparing(Outcome::scenario));
        StringBuilder text = new StringBuilder();
        text.append("# Fault suite report\n\n")
                .append("Profile `")
                .append(profile.name().toLowerCase(java.util.Locale.ROOT))
                .append("`, written ")
                .append(Instant.now().truncatedTo(ChronoUnit.SECONDS))
                .append(" by `dev.leasehold.faults.FaultRunner` (see `tools/leasehold-faults/README.md`).")
                .append(" A canary is the same work done without the protection; its violations prove the fault")
                .append(" really happened and must be above 0. The protected path must show 0.\n\n")
                .append("| scenario | backend | operations | canary violations (> 0) | protected violations (0)")
                .append(" | longest stall | faults injected | history checker | verdict |\n")
                .append("|---|---|---:|---:|---:|---:|---:|---|---|\n");
        for (Outcome o : sorted) {
            text.append(row(o)).append('\n');
        }
        text.append("\n## Details\n\n");
        for (Outcome o : sorted) {
            text.append("- **")
                    .append(o.scenario())
                    .append(", ")
                    .append(o.backend())
                    .append("**");
            if (o.details().isEmpty()) {
                text.append(": nothing to add\n");
                continue;
            }
            text.append('\n');
            for (String d : o.details()) {
                text.append("  - ").append(d.replace("|", "\\|")).append('\n');
            }
        }
        return text.toString();
    }

    private static String row(Outcome o) {
        return "| " + o.scenario() + " | " + o.backend() + " | " + o.operations() + " | " + o.canaryViolations()
                + " | " + o.protectedViolations() + " | " + o.longestStall().toMillis() + " ms | "
                + (o.faults() < 0 ? "-" : Integer.toString(o.faults())) + " | " + o.checker() + " | " + o.verdict()
                + " |";
    }

    /** Writes the Markdown to {@code file}, creating its directory. */
    public void write(Path file, Profile profile) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, markdown(profile), StandardCharsets.UTF_8);
    }
}
