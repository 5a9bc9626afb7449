package com.example.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * This module is the application {@code docs/getting-started.md} describes: every code block of
 * the page (Maven, Java, properties, SQL) is in one of the module's files, and every file of its
 * {@code src/main} is on the page whole, whitespace aside; so a reader who copies the page gets
 * what this build compiles and {@link GettingStartedTest} starts.
 */
class GettingStartedPageTest {

    private static final Path MODULE = Path.of("").toAbsolutePath();
    private static final Path PAGE = MODULE.resolve("../../docs/getting-started.md").normalize();

    @Test
    void everySnippetOfThePageIsInThisApplication() throws IOException {
        StringBuilder sources = new StringBuilder();
        try (Stream<Path> files = Files.walk(MODULE.resolve("src/main"))) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                sources.append(normalize(Files.readString(file))).append('\n');
            }
        }
        sources.append(normalize(Files.readString(MODULE.resolve("pom.xml"))));
        List<String> snippets = snippets(Files.readAllLines(PAGE));
        assertThat(snippets).as("code blocks of the page").hasSizeGreaterThanOrEqualTo(5);
        for (String snippet : snippets) {
            assertThat(sources.toString())
                    .as("a snippet of docs/getting-started.md that this module does not contain")
                    .contains(normalize(snippet));
        }
    }

    @Test
    void everyFileOfTheApplicationIsOnThePageWhole() throws IOException {
        List<String> snippets = snippets(Files.readAllLines(PAGE)).stream()
                .map(GettingStartedPageTest::normalize)
                .toList();
        try (Stream<Path> files = Files.walk(MODULE.resolve("src/main"))) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                String whole = normalize(Files.readString(file));
                assertThat(snippets)
                        .as("a code block of docs/getting-started.md that is all of %s", MODULE.relativize(file))
                        .contains(whole);
            }
        }
    }

    /** The code blocks of the page that are not shell commands. */
    static List<String> snippets(List<String> lines) {
        List<String> found = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith("```")) {
                String language = lines.get(i).substring(3).trim();
                StringBuilder body = new StringBuilder();
                for (i++; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
                    body.append(lines.get(i)).append('\n');
                }
                if (List.of("java", "xml", "properties", "sql").contains(language)) {
                    found.add(body.toString());
                }
            }
        }
        return found;
    }

    private static String normalize(String text) {
        return text.replaceAll("\\s+", " ").trim();
    }
}
