package dev.leasehold.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The library versions of {@code docs/compatibility.md} are the build's. */
class CompatibilityPageTest {

    private static final Path ROOT = Path.of("..", "..");

    @Test
    void theLibraryVersionsOnThePageAreTheBuilds() throws Exception {
        String pom = Files.readString(ROOT.resolve("pom.xml"));
        String page = Files.readString(ROOT.resolve("docs/compatibility.md"));
        Map<String, String> rows = Map.of(
                "Java", "maven.compiler.release",
                "Spring Boot", "spring-boot.version",
                "Lettuce", "lettuce.version",
                "jetcd", "jetcd.version",
                "HikariCP", "hikaricp.version",
                "PostgreSQL JDBC driver", "postgresql.version",
                "MariaDB Connector/J", "mariadb-client.version",
                "H2", "h2.version",
                "SLF4J", "slf4j.version");
        rows.forEach((library, property) -> {
            Matcher version = Pattern.compile("<" + Pattern.quote(property) + ">([^<]+)</")
                    .matcher(pom);
            assertThat(version.find()).as(property + " in pom.xml").isTrue();
            assertThat(page)
                    .as("the row of " + library)
                    .containsPattern(
                            "(?m)^\\| " + Pattern.quote(library) + " \\| " + Pattern.quote(version.group(1)) + "[ |]");
        });
        Matcher jackson = Pattern.compile("<jackson.version>([^<]+)</").matcher(pom);
        assertThat(jackson.find()).isTrue();
        assertThat(page).contains(jackson.group(1) + " when only Jackson 2 is present");
    }
}
