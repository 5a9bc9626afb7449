package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Waiting never pins a virtual thread's carrier. The build runs on Java 17, so the check runs
 * {@link VirtualThreadWaiters} in a child JVM of release 21 or later: this JVM if it is one, else
 * {@code LEASEHOLD_VT_JAVA_HOME}, else a JDK 21+ found under {@code /usr/lib/jvm}; without any the
 * test is skipped with a message naming what to install. The source check below holds on every
 * JDK: no monitor ({@code synchronized}, {@code Object.wait}) anywhere in the engine, which is what
 * pinned carriers on JDK 21 to 23.
 */
class VirtualThreadWaitersTest {

    @Test
    void virtualThreadWaitersDoNotPinTheirCarrier() throws Exception {
        Path java = javaOf21OrLater().orElseGet(() -> {
            Assumptions.abort("no JDK 21 or later found (set LEASEHOLD_VT_JAVA_HOME or install one under"
                    + " /usr/lib/jvm) to run the virtual-thread check");
            return null;
        });
        Process child = new ProcessBuilder(
                        java.toString(),
                        "-Djdk.virtualThreadScheduler.parallelism=1",
                        "-Djdk.virtualThreadScheduler.maxPoolSize=1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        VirtualThreadWaiters.class.getName(),
                        "200")
                .redirectErrorStream(true)
                .start();
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(child.waitFor(90, TimeUnit.SECONDS)).as("child JVM finished").isTrue();
        assertThat(output).as(output).contains("waiters=200 done=200 pinned=0");
        assertThat(child.exitValue()).as(output).isZero();
    }

    @Test
    void noMonitorIsUsedAnywhereInTheEngine() throws IOException {
        Path sources = Path.of("src/main/java/dev/leasehold");
        Assumptions.assumeTrue(
                Files.isDirectory(sources),
                "sources not found from " + Path.of("").toAbsolutePath());
        List<Path> files;
        try (Stream<Path> walk = Files.walk(sources)) {
            files = walk.filter(p -> p.toString().endsWith(".java")).toList();
        }
        assertThat(files).isNotEmpty();
        for (Path file : files) {
            String code = stripComments(Files.readString(file));
            assertThat(code)
                    .as(file.toString())
                    .doesNotContain("synchronized")
                    .doesNotContain(".wait(")
                    .doesNotContain("notifyAll(");
        }
    }

    private static String stripComments(String source) {
        return source.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
    }

    private static Optional<Path> javaOf21OrLater() throws IOException {
        if (Runtime.version().feature() >= 21) {
            return Optional.of(Path.of(System.getProperty("java.home"), "bin", "java"));
        }
        String configured = System.getenv("LEASEHOLD_VT_JAVA_HOME");
        if (configured != null && !configured.isBlank()) {
            return Optional.of(Path.of(configured, "bin", "java"));
        }
        Path jvms = Path.of("/usr/lib/jvm");
        if (!Files.isDirectory(jvms)) {
            return Optional.empty();
        }
        try (Stream<Path> installed = Files.list(jvms)) {
            return installed
                    .filter(home -> Files.isExecutable(home.resolve("bin/java")))
                    .filter(home -> feature(home) >= 21)
                    .map(home -> home.resolve("bin/java"))
                    .findFirst();
        }
    }

    /** The release of a JDK from its {@code release} file, 0 if unknown. */
    private static int feature(Path home) {
        try {
            for (String line : Files.readAllLines(home.resolve("release"))) {
                if (line.startsWith("JAVA_VERSION=")) {
                    String version = line.substring("JAVA_VERSION=".length()).replace("\"", "");
                    return Integer.parseInt(version.split("[.+-]")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }
}
