package dev.leasehold.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The logger table of {@code docs/troubleshooting.md} names the loggers the engine really has. */
class TroubleshootingPageTest {

    private static final Path ROOT = Path.of("..", "..");

    @Test
    void everyCoreClassWithALoggerIsARowOfTheLoggerTable() throws Exception {
        String page = Files.readString(ROOT.resolve("docs/troubleshooting.md"));
        Path core = ROOT.resolve("leasehold-core/src/main/java/dev/leasehold");
        List<String> logging;
        try (Stream<Path> sources = Files.list(core)) {
            logging = sources.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> read(p).contains("LoggerFactory.getLogger("))
                    .map(p -> p.getFileName().toString().replace(".java", ""))
                    .sorted()
                    .toList();
        }
        assertThat(logging).as("classes of leasehold-core with a logger").hasSizeGreaterThanOrEqualTo(8);
        for (String name : logging) {
            assertThat(page).as("the logger table's row of " + name).contains("| `dev.leasehold." + name + "` |");
        }
    }

    @Test
    void theParameterNamesSectionIsTheStartupRefusalOfTheOperationsPage() throws Exception {
        String page = Files.readString(ROOT.resolve("docs/troubleshooting.md"));
        String operations = Files.readString(ROOT.resolve("docs/operations.md"));
        assertThat(page)
                .contains("## Startup fails: \"compiled without parameter names\"")
                .contains("(operations.md#troubleshooting-compiled-without-parameter-names)");
        assertThat(operations).contains("## Troubleshooting: \"compiled without parameter names\"");
        assertThat(Files.readString(ROOT.resolve("docs/getting-started.md")))
                .contains("(troubleshooting.md#startup-fails-compiled-without-parameter-names)");
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
