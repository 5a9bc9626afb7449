package dev.leasehold.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.spring.LeaseholdProperties;
import java.beans.PropertyDescriptor;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.ResolvableType;
import org.springframework.util.unit.DataSize;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Keeps {@code docs/configuration.md} equal to the code: every {@code leasehold.*} property's type
 * and default are read from a freshly constructed {@link LeaseholdProperties} (its Java types and
 * field values), its description from the configuration metadata, and the two must name the same
 * properties with the same defaults. Run with {@code -Dleasehold.docs.write=true} to rewrite the
 * page after changing a property.
 */
class ConfigurationReferenceTest {

    private static final Path PAGE = Path.of("..", "..", "docs", "configuration.md");

    @Test
    void theConfigurationPageListsEveryPropertyWithTheTypeAndDefaultOfTheCode() throws Exception {
        String expected = render();
        if (Boolean.getBoolean("leasehold.docs.write")) {
            Files.writeString(PAGE, expected);
        }
        assertThat(Files.readString(PAGE))
                .as("docs/configuration.md is stale: run this test with -Dleasehold.docs.write=true")
                .isEqualTo(expected);
    }

    @Test
    void theMetadataNamesEveryPropertyOfTheCodeAndItsDefaultsAreTheCodes() throws Exception {
        Map<String, Property> code = codeProperties();
        Map<String, JsonNode> metadata = metadata();
        List<String> leasehold = metadata.keySet().stream()
                .filter(name -> name.startsWith("leasehold."))
                .toList();
        assertThat(leasehold).containsExactlyInAnyOrderElementsOf(code.keySet());
        for (String name : leasehold) {
            JsonNode entry = metadata.get(name);
            if (entry.has("defaultValue")) {
                assertThat(code.get(name).value)
                        .as("default of %s: metadata says %s", name, entry.get("defaultValue"))
                        .isEqualTo(parse(entry.get("defaultValue"), code.get(name).type));
            }
        }
    }

    @Test
    void theRenderedTypesAndDefaultsAreTheCodesNotClassNames() throws Exception {
        String page = render();
        assertThat(page)
                .contains(
                        "| `leasehold.idempotency.replay-headers` | list of String | `Location, ETag, Content-Location,"
                                + " Last-Modified` |")
                .contains("| `leasehold.lock.advisor-order` | Integer | `-2147483448` |")
                .contains("| `leasehold.backend` | one of `auto`, `redis`, `etcd`, `jdbc`, `memory` | `auto` |")
                .doesNotContain("LeaseholdProperties.")
                .doesNotContain("String>");
    }

    /** A leaf property of {@link LeaseholdProperties}: its declared type and the value a new instance has. */
    record Property(ResolvableType type, Object value) {}

    static Map<String, Property> codeProperties() {
        Map<String, Property> found = new TreeMap<>();
        walk(new BeanWrapperImpl(new LeaseholdProperties()), "leasehold", found);
        return found;
    }

    private static void walk(BeanWrapper bean, String prefix, Map<String, Property> found) {
        for (PropertyDescriptor descriptor : bean.getPropertyDescriptors()) {
            if (descriptor.getReadMethod() == null || descriptor.getName().equals("class")) {
                continue;
            }
            String name = prefix + "." + kebab(descriptor.getName());
            Class<?> type = descriptor.getPropertyType();
            Object value = bean.getPropertyValue(descriptor.getName());
            if (type.getName().startsWith("dev.leasehold.") && !type.isEnum()) {
                walk(new BeanWrapperImpl(value), name, found);
            } else if (descriptor.getWriteMethod() != null) {
                found.put(name, new Property(ResolvableType.forMethodReturnType(descriptor.getReadMethod()), value));
            }
        }
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
    }

    private static Object parse(JsonNode defaultValue, ResolvableType type) {
        Class<?> raw = type.resolve(Object.class);
        if (defaultValue.isArray()) {
            List<String> items = new ArrayList<>();
            defaultValue.forEach(item -> items.add(item.asString()));
            return items;
        }
        String text = defaultValue.asString();
        if (raw == Duration.class) {
            return DurationStyle.detectAndParse(text);
        }
        if (raw == DataSize.class) {
            return DataSize.parse(text);
        }
        if (raw.isEnum()) {
            return Arrays.stream(raw.getEnumConstants())
                    .filter(constant -> enumValue((Enum<?>) constant).equals(text))
                    .findFirst()
                    .orElse(null);
        }
        if (raw == int.class || raw == Integer.class) {
            return defaultValue.asInt();
        }
        if (raw == boolean.class || raw == Boolean.class) {
            return defaultValue.asBoolean();
        }
        return text;
    }

    private static String enumValue(Enum<?> constant) {
        return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static Map<String, JsonNode> metadata() throws Exception {
        JsonNode metadata;
        try (InputStream in =
                ConfigurationReferenceTest.class.getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in)
                    .as("configuration metadata generated by the processor")
                    .isNotNull();
            metadata = JsonMapper.builder().build().readTree(in);
        }
        Map<String, JsonNode> byName = new TreeMap<>();
        metadata.get("properties").forEach(p -> byName.put(p.get("name").asString(), p));
        return byName;
    }

    /** The type as a user writes it: values of an enum, "list of" a collection, no Java class names. */
    static String typeText(ResolvableType type) {
        Class<?> raw = type.resolve(Object.class);
        if (raw.isEnum()) {
            return "one of "
                    + Arrays.stream(raw.getEnumConstants())
                            .map(constant -> "`" + enumValue((Enum<?>) constant) + "`")
                            .collect(Collectors.joining(", "));
        }
        if (List.class.isAssignableFrom(raw)) {
            return "list of " + typeText(type.asCollection().getGeneric(0));
        }
        if (raw.isPrimitive()) {
            return raw == int.class ? "Integer" : raw == boolean.class ? "Boolean" : raw.getSimpleName();
        }
        return raw.getSimpleName();
    }

    /** The default as a user writes it in {@code application.properties}; blank when there is none. */
    static String valueText(Object value) {
        if (value == null) {
            return "";
        }
        String text;
        if (value instanceof Duration duration) {
            text = durationText(duration);
        } else if (value instanceof Enum<?> constant) {
            text = enumValue(constant);
        } else if (value instanceof List<?> list) {
            text = list.stream().map(String::valueOf).collect(Collectors.joining(", "));
        } else {
            text = String.valueOf(value);
        }
        return "`" + text + "`";
    }

    private static String durationText(Duration duration) {
        if (duration.isZero()) {
            return "0";
        }
        long millis = duration.toMillis();
        if (millis % 3_600_000 == 0) {
            return millis / 3_600_000 + "h";
        }
        if (millis % 60_000 == 0) {
            return millis / 60_000 + "m";
        }
        if (millis % 1_000 == 0) {
            return millis / 1_000 + "s";
        }
        return millis + "ms";
    }

    private static String metadataType(JsonNode property) {
        String type = property.path("type").asString("");
        try {
            Class<?> raw = Class.forName(type);
            if (raw.isEnum()) {
                return typeText(ResolvableType.forClass(raw));
            }
        } catch (ClassNotFoundException | LinkageError e) {
            // not a class on this class path: keep the metadata's simple name
        }
        return type.substring(type.lastIndexOf('.') + 1).replace('$', '.');
    }

    static String render() throws Exception {
        Map<String, Property> code = codeProperties();
        List<JsonNode> properties = new ArrayList<>(metadata().values());
        properties.sort(Comparator.comparing(p -> p.get("name").asString()));
        StringBuilder page = new StringBuilder();
        page.append("# Configuration properties\n\n")
                .append("Every `leasehold.*` property. The type and the default are read from the code\n")
                .append("(`LeaseholdProperties` as constructed), the description from the configuration metadata\n")
                .append("the build writes; `ConfigurationReferenceTest` fails when this page, the metadata and the\n")
                .append("code disagree. Durations take Spring Boot's forms (`500ms`, `2s`, `PT5M`); lists are\n")
                .append("comma-separated (`a,b`) or indexed (`[0]`). Bad values fail startup with the property's\n")
                .append("name and value.\n\n")
                .append("| property | type | default | description |\n")
                .append("|---|---|---|---|\n");
        for (JsonNode property : properties) {
            String name = property.get("name").asString();
            Property fromCode = code.get(name);
            String type;
            String defaultValue;
            if (fromCode != null) {
                type = typeText(fromCode.type);
                defaultValue = valueText(fromCode.value);
            } else {
                type = metadataType(property);
                defaultValue = property.has("defaultValue")
                        ? "`" + property.get("defaultValue").asString() + "`"
                        : "";
            }
            String description = property.path("description")
                    .asString("")
                    .replaceAll("\\{@code ([^}]*)}", "`$1`")
                    .replace("|", "\\|")
                    .replace("\n", " ");
            page.append("| `")
                    .append(name)
                    .append("` | ")
                    .append(type.replace("|", "\\|"))
                    .append(" | ")
                    .append(defaultValue)
                    .append(" | ")
                    .append(description)
                    .append(" |\n");
        }
        page.append("\nThe health indicator can be switched off with `management.health.leasehold.enabled=false`.\n");
        return page.toString();
    }
}
