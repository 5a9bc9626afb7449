package dev.leasehold.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Every relative link of the project's Markdown pages names a file or folder of the repository. */
class DocumentLinksTest {

    private static final Path ROOT = Path.of("..", "..").toAbsolutePath().normalize();

    /** A Markdown link's target, up to an anchor or a title. */
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)#\\s]+)(?:#[^)]*)?\\)");

    @Test
    void everyRelativeLinkOfAPageResolves() throws IOException {
        List<String> broken = new ArrayList<>();
        List<Path> pages = pages();
        assertThat(pages).as("pages found under " + ROOT).hasSizeGreaterThan(10);
        for (Path page : pages) {
            Matcher link = LINK.matcher(Files.readString(page));
            while (link.find()) {
                String target = link.group(1);
                if (target.matches("^[a-zA-Z][a-zA-Z+.-]*:.*")) {
                    continue; // https:, mailto: and the like
                }
                Path resolved = page.getParent().resolve(target).normalize();
                if (!Files.exists(resolved)) {
                    broken.add(ROOT.relativize(page) + " -> " + target);
                }
            }
        }
        assertThat(broken).as("links that name nothing").isEmpty();
    }

    @Test
    void aMissingTargetIsFound() {
        Matcher link = LINK.matcher("see [the page](../nowhere/missing.md#part) and [a site](https://example.com)");
        assertThat(link.find()).isTrue();
        assertThat(link.group(1)).isEqualTo("../nowhere/missing.md");
        assertThat(Files.exists(ROOT.resolve("docs").resolve(link.group(1)).normalize()))
                .isFalse();
    }

    private static List<Path> pages() throws IOException {
        try (Stream<Path> files = Files.walk(ROOT)) {
            return files.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> {
                        Path relative = ROOT.relativize(p);
                        for (Path part : relative) {
                            String name = part.toString();
                            if (name.equals("target") || name.equals("node_modules") || name.startsWith(".")) {
                                return false;
                            }
                        }
                        return true;
                    })
                    .toList();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }
}
