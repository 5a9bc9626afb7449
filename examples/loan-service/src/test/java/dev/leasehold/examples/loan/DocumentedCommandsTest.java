package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Every shell command printed in a fenced block of the pages at the top (README, CONTRIBUTING, ...),
 * {@code docs/}, the modules' and the examples' READMEs is run, or its runner named: the loan service's {@code curl} commands run here exactly
 * as printed (only {@code localhost:8080} becomes this test's port) against one fresh service with
 * its demo data, and must answer 2xx ({@code curl --fail-with-body}); a printed output block after
 * a command must match what the command printed. Other commands must be a whole line of a CI
 * script (or the command a {@code serve "..."} line of {@code .ci/docs-commands} starts), or in
 * {@link #NOT_RUN} with the reason; an entry of {@link #NOT_RUN} must still be printed somewhere.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.datasource.url=jdbc:h2:mem:loan-docs;DB_CLOSE_DELAY=-1", "loan.overdue.cron=-"})
class DocumentedCommandsTest {

    static final Path ROOT = Path.of("..", "..").toAbsolutePath().normalize();

    /** Commands no test or CI script runs as printed, each with the reason. */
    static final Map<String, String> NOT_RUN = Map.ofEntries(
            Map.entry(
                    "mvn -q -B install -DskipTests",
                    "the first half of the README's start commands, which .ci/docs-commands runs as printed"),
            Map.entry(
                    "mvn -q -B install -DskipTests && mvn -q -B -pl tools/leasehold-bench exec:java",
                    "the benchmark takes minutes on quiet machines and rewrites docs/bench; measured, never asserted"),
            Map.entry(
                    "mvn -q -B -pl tools/leasehold-bench -am compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt",
                    "sets up the many-process benchmark, which is measured by hand, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.MultiProcessBench",
                    "the many-process benchmark: minutes of load on quiet machines, measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.HeldLeasesBench",
                    "the held-leases benchmark: minutes of load against a private Redis, measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.contenders=leasehold-etcd -Dbench.held=1000,10000"
                            + " -cp target/classes:../../stores/leasehold-etcd/target/classes:$(cat target/cp.txt)"
                            + " dev.leasehold.bench.HeldLeasesBench",
                    "the held-leases benchmark on a private etcd: minutes of load, measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.contenders=leasehold-redis,leasehold-redis-barging,redisson-fair"
                            + " -Dbench.modes=jvm -Dbench.seconds=8 -cp target/classes:$(cat target/cp.txt)"
                            + " dev.leasehold.bench.MultiProcessBench",
                    "the many-process benchmark of the Redis modes: minutes of load, measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.warmup=15 -Dbench.redis=redis://127.0.0.1:6391"
                            + " -cp target/classes:$(cat target/cp.txt)"
                            + " dev.leasehold.bench.ProfileDriver leasehold-redis pairs 1 10",
                    "client CPU per operation against a private redis-server started by hand; measured, never asserted"),
            Map.entry(
                    "mvn -q -B -pl tools/leasehold-bench -am compile"
                            + " org.apache.maven.plugins:maven-dependency-plugin:3.11.0:build-classpath"
                            + " -Dmdep.outputFile=target/cp.txt",
                    "sets up the held-leases and memory benchmarks, which are measured by hand, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -cp target/classes:$(cat target/cp.txt)"
                            + " dev.leasehold.bench.DistinctKeysMemoryBench",
                    "200 000 keys against a private Redis and a minute's wait: measured, never asserted"),
            Map.entry("cd tools/leasehold-bench", "a step of the profiling recipe, run by hand"),
            Map.entry(
                    "java \"-XX:StartFlightRecording=delay=4s,filename=redis.jfr,settings=profile,jdk.ExecutionSample#period=1ms\""
                            + " -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.ProfileDriver leasehold-redis busy 1 16",
                    "a profiling recipe: a flight recording to read by hand, nothing to assert"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.postgres=jdbc:postgresql://127.0.0.1:5432/leasehold_bench"
                            + " -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.ProfileDriver leasehold-postgresql pairs 1 6",
                    "the SQL side-by-side profile: seconds of load per contender, measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.warmup=10 -Dbench.postgres=jdbc:postgresql://127.0.0.1:5432/leasehold_bench"
                            + " -cp ../../stores/leasehold-jdbc/target/classes:target/classes:$(cat target/cp.txt)"
                            + " dev.leasehold.bench.ProfileDriver leasehold-postgresql pairs 1 6",
                    "the SQL side-by-side profile of the built store against an older one: measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.warmup=12 -Dbench.postgres=jdbc:postgresql://127.0.0.1:5432/leasehold_bench"
                            + " -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.ProfileDriver leasehold-postgresql pairs 1 8",
                    "the SQL side-by-side profile on a quiet machine: measured, never asserted"),
            Map.entry(
                    "cd tools/leasehold-bench && java -Dbench.warmup=12 -Dbench.redis=redis://127.0.0.1:6391"
                            + " -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.ProfileDriver leasehold-redis pairs 1 8",
                    "the Redis side-by-side profile on a quiet machine, against a private redis-server: measured, never asserted"),
            Map.entry(
                    "java -cp tools/leasehold-bench/target/classes:$(cat tools/leasehold-bench/target/cp.txt)"
                            + " org.openjdk.jmh.Main 'InProcessBenchmarks.engine' -prof gc -f 1 -wi 3 -i 3 -w 2s -r 2s",
                    "the engine's allocation per operation under JMH: measured, never asserted"),
            Map.entry(
                    "java -Dbench.warmup=10 -Dbench.mariadb=jdbc:mariadb://127.0.0.1:33317/sqlfast_bench"
                            + " -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.ProfileDriver leasehold-mariadb pairs 1 6",
                    "the MariaDB profile against a private mariadbd started by hand: measured, never asserted"),
            Map.entry(
                    "mvn -q -B -pl tools/leasehold-bench dependency:build-classpath -Dmdep.outputFile=cp.txt",
                    "sets up the JMH benchmarks, which are measured by hand, never asserted"),
            Map.entry(
                    "java -cp tools/leasehold-bench/target/classes:$(cat tools/leasehold-bench/cp.txt) org.openjdk.jmh.Main InProcessBenchmarks",
                    "JMH benchmarks: minutes per run, measured, never asserted"),
            Map.entry(
                    "mvn -B -pl tools/leasehold-faults -am verify",
                    "part of `mvn -B verify` (.ci/run), which runs every fault scenario with the short profile"),
            Map.entry(
                    "mvn -B -pl tools/leasehold-faults -am -DskipTests -Pfault-report verify -Dfaults.profile=long",
                    "the long fault profile (five times the operations) takes too long for CI and rewrites"
                            + " docs/faults/latest.md; the short profile runs in `mvn -B verify`"),
            Map.entry(
                    "mvn -B -pl leasehold-core verify",
                    "part of `mvn -B verify` (.ci/run), which runs the mutation gate in leasehold-core"),
            Map.entry("mvn -B verify -Dleasehold.mutation.skip=true", "`mvn -B verify` (.ci/run) with the gate"),
            Map.entry(
                    "mvn -B -pl leasehold-core test -Dtest=LeaseEngineScheduleTest",
                    "part of `mvn -B verify` (.ci/run)"),
            Map.entry(
                    "mvn -B -pl examples/loan-service -am verify -Dtest='dev.leasehold.examples.loan.**' -Dsurefire.failIfNoSpecifiedTests=false",
                    "part of `mvn -B verify` (.ci/run)"));

    /** Output lines that do not depend on the interleaving of the storm's threads. */
    static final List<String> STABLE_OUTPUT =
            List.of("storm:", "  5xx answers", "  other failures", "  max inside at once", "  conservation");

    @LocalServerPort
    int port;

    record Command(Path file, int line, String text, List<String> output) {
        @Override
        public String toString() {
            return ROOT.relativize(file) + ":" + line + ": " + text;
        }
    }

    @Test
    void everyLoanServiceCommandAnswersAsPrinted(@TempDir Path curlHome) throws Exception {
        Files.writeString(curlHome.resolve(".curlrc"), "fail-with-body\nsilent\nshow-error\nmax-time = 600\n");
        List<Command> loan = commands().stream()
                .filter(c -> c.text.startsWith("curl ") && c.text.contains("localhost:8080"))
                .toList();
        assertThat(loan).as("the README's loan-service calls").hasSizeGreaterThanOrEqualTo(6);
        List<String> failures = new ArrayList<>();
        for (Command command : loan) {
            String run = command.text.replace("localhost:8080", "localhost:" + port);
            ProcessBuilder builder = new ProcessBuilder("bash", "-c", run).redirectErrorStream(true);
            builder.environment().put("CURL_HOME", curlHome.toString());
            Process process = builder.start();
            String printed;
            try (var in = process.getInputStream()) {
                printed = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            assertThat(process.waitFor(660, TimeUnit.SECONDS)).isTrue();
            if (process.exitValue() != 0) {
                failures.add(command + "\n  exit " + process.exitValue() + ": " + printed);
                continue;
            }
            if (!command.output.isEmpty()) {
                String mismatch =
                        compare(command.output, printed.strip().lines().toList());
                if (mismatch != null) {
                    failures.add(command + "\n  " + mismatch + "\n  printed:\n" + printed);
                }
            }
        }
        assertThat(failures).as("documented commands that fail").isEmpty();
    }

    @Test
    void everyOtherCommandIsRunByACiScriptOrNamedWithTheReason() throws IOException {
        Set<String> ci = ciCommands();
        List<String> unrun = new ArrayList<>();
        for (Command command : commands()) {
            boolean here = command.text.startsWith("curl ") && command.text.contains("localhost:8080");
            if (!here && !ci.contains(command.text) && !NOT_RUN.containsKey(command.text)) {
                unrun.add(command.toString());
            }
        }
        assertThat(unrun)
                .as("commands printed in the docs that nothing runs: run them in .ci/docs-commands or a test")
                .isEmpty();
    }

    @Test
    void everyCommandNamedAsNotRunIsStillDocumentedAndNotRunByCi() throws IOException {
        Set<String> documented = new HashSet<>();
        commands().forEach(command -> documented.add(command.text));
        Set<String> ci = ciCommands();
        assertThat(NOT_RUN.keySet())
                .as("NOT_RUN entries whose command no page prints any more")
                .allMatch(documented::contains);
        assertThat(NOT_RUN.keySet())
                .as("NOT_RUN entries that a CI script runs after all")
                .noneMatch(ci::contains);
    }

    /** A command counts as run only as a whole line, not as part of a longer one. */
    @Test
    void aCiScriptRunsACommandOnlyAsAWholeLine() {
        Set<String> ci = ciCommands(List.of(
                "mvn -B verify -Dx=1",
                "  serve \"java -jar app.jar --flag\" 8080 calls",
                "curl   -s localhost:8081/a"));
        assertThat(ci)
                .contains("java -jar app.jar --flag", "curl -s localhost:8081/a")
                .doesNotContain("mvn -B verify", "java -jar app.jar");
    }

    /** The commands of the CI scripts: every line, and the command each {@code serve "..."} line starts. */
    static Set<String> ciCommands() throws IOException {
        List<String> lines = new ArrayList<>();
        for (String script : List.of(".ci/run", ".ci/docs-commands")) {
            lines.addAll(Files.readAllLines(ROOT.resolve(script)));
        }
        return ciCommands(lines);
    }

    static Set<String> ciCommands(List<String> lines) {
        Pattern serve = Pattern.compile("^serve \"([^\"]+)\"");
        Set<String> commands = new HashSet<>();
        for (String line : lines) {
            String text = line.replaceAll("\\s+", " ").trim();
            commands.add(text);
            Matcher started = serve.matcher(text);
            if (started.find()) {
                commands.add(started.group(1));
            }
        }
        return commands;
    }

    /** What docs/problems.md and docs/operations.md say of the actuator endpoints' refusals. */
    @Test
    void theActuatorsRefusalsAreErrorObjectsNotProblemDocuments() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/leaseholdmode"))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString("admin:admin-pw".getBytes()))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"mode\":\"off\",\"reason\":\"drill\"}"))
                .build();
        HttpResponse<String> refused = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
        assertThat(refused.headers().firstValue("Content-Type").orElse("")).doesNotContain("problem");
        assertThat(refused.body()).isEqualTo("{\"error\":\"mode must be enforce or bypass, was off\"}");
    }

    @Test
    void theDatabaseProfilesNeverDefaultToTheTestsDatabase() throws IOException {
        for (String profile : List.of("postgres", "mariadb")) {
            String yml = Files.readString(
                    ROOT.resolve("examples/loan-service/src/main/resources/application-" + profile + ".yml"));
            assertThat(yml).as(profile).contains("/loan}").doesNotContain("/test}");
        }
    }

    /** The first line differing in a label, or a stable line differing in its value; null when they match. */
    static String compare(List<String> expected, List<String> printed) {
        if (expected.size() != printed.size()) {
            return "expected " + expected.size() + " lines, printed " + printed.size();
        }
        for (int i = 0; i < expected.size(); i++) {
            String want = expected.get(i);
            String got = printed.get(i);
            if (want.startsWith("{")) {
                if (!json(want).equals(json(got))) {
                    return "line " + (i + 1) + ": expected JSON like [" + want + "], printed [" + got + "]";
                }
                continue;
            }
            boolean stable = STABLE_OUTPUT.stream().anyMatch(want::startsWith);
            if (stable ? !want.equals(got) : !label(want).equals(label(got))) {
                return "line " + (i + 1) + ": expected [" + want + "], printed [" + got + "]";
            }
        }
        return null;
    }

    /** A JSON answer with its numbers masked: members in any order, the same names and strings. */
    private static JsonNode json(String text) {
        try {
            return mask(JsonMapper.builder().build().readTree(text));
        } catch (RuntimeException e) {
            return JsonNodeFactory.instance.stringNode("not JSON: " + text);
        }
    }

    private static JsonNode mask(JsonNode node) {
        if (node.isNumber()) {
            return JsonNodeFactory.instance.numberNode(0);
        }
        if (node instanceof ObjectNode object) {
            ObjectNode masked = JsonNodeFactory.instance.objectNode();
            object.properties().forEach(member -> masked.set(member.getKey(), mask(member.getValue())));
            return masked;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode masked = JsonNodeFactory.instance.arrayNode();
            array.forEach(element -> masked.add(mask(element)));
            return masked;
        }
        return node;
    }

    private static String label(String line) {
        return line.replaceAll("[0-9.]+", "#");
    }

    /** Every command of a fenced shell block, continuation lines joined, with the output block after it. */
    static List<Command> commands() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> top = Files.list(ROOT);
                Stream<Path> docs = Files.walk(ROOT.resolve("docs"));
                Stream<Path> modules = Files.walk(ROOT, 2)) {
            // README, CONTRIBUTING and the other pages at the top
            top.filter(p -> p.toString().endsWith(".md")).forEach(files::add);
            docs.filter(p -> p.toString().endsWith(".md")).forEach(files::add);
            // each module's README, at the top or one folder down (stores/, spring/, examples/, tools/)
            modules.filter(p -> !p.equals(ROOT) && Files.exists(p.resolve("pom.xml")))
                    .map(p -> p.resolve("README.md"))
                    .filter(Files::exists)
                    .forEach(files::add);
        }
        files.sort(null);
        List<Command> found = new ArrayList<>();
        for (Path file : files) {
            found.addAll(commands(file));
        }
        return found;
    }

    private static List<Command> commands(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file);
        Map<Integer, List<String>> blocks = new LinkedHashMap<>();
        Map<Integer, String> languages = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith("```")) {
                int start = i;
                List<String> body = new ArrayList<>();
                for (i++; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
                    body.add(lines.get(i));
                }
                blocks.put(start, body);
                languages.put(start, lines.get(start).substring(3).trim());
            }
        }
        List<Command> found = new ArrayList<>();
        List<Integer> starts = new ArrayList<>(blocks.keySet());
        for (int b = 0; b < starts.size(); b++) {
            int start = starts.get(b);
            List<String> body = blocks.get(start);
            if (!isShell(languages.get(start), body)) {
                continue;
            }
            List<String> output = List.of();
            if (b + 1 < starts.size()) {
                int next = starts.get(b + 1);
                boolean adjacent =
                        lines.subList(start + body.size() + 2, next).stream().allMatch(String::isBlank);
                if (adjacent && languages.get(next).isEmpty() && !isShell("", blocks.get(next))) {
                    output = blocks.get(next);
                }
            }
            StringBuilder command = new StringBuilder();
            int commandLine = 0;
            List<Command> inBlock = new ArrayList<>();
            for (int l = 0; l < body.size(); l++) {
                String text = body.get(l);
                if (command.isEmpty()) {
                    commandLine = start + l + 2;
                }
                if (text.endsWith("\\")) {
                    command.append(text, 0, text.length() - 1).append(' ');
                    continue;
                }
                command.append(text);
                String joined = command.toString()
                        .replaceAll("\\s+#\\s.*$", "")
                        .replaceAll("\\s+", " ")
                        .trim();
                command.setLength(0);
                if (!joined.isEmpty() && !joined.startsWith("#")) {
                    inBlock.add(new Command(file, commandLine, joined, List.of()));
                }
            }
            if (!inBlock.isEmpty() && !output.isEmpty()) {
                Command last = inBlock.remove(inBlock.size() - 1);
                inBlock.add(new Command(last.file, last.line, last.text, output));
            }
            found.addAll(inBlock);
        }
        return found;
    }

    private static boolean isShell(String language, List<String> body) {
        if (List.of("sh", "bash", "shell").contains(language)) {
            return true;
        }
        return language.isEmpty()
                && !body.isEmpty()
                && Stream.of("mvn ", "java ", "curl ").anyMatch(body.get(0)::startsWith);
    }
}
