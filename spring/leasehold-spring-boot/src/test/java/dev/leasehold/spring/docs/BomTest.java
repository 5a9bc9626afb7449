package dev.leasehold.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The BOM aligns every published module (each module of the build that is deployed) and the H2
 * version the SQL store is tested with: Spring Boot 4.0's own H2 (2.4.240) fails statements of the
 * store under load, so an application importing the BOM before Spring Boot's gets the tested one.
 */
class BomTest {

    private static final Path ROOT = Path.of("..", "..");

    private static Document read(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
    }

    private static String child(Element parent, String name) {
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            if (nodes.item(i) instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().trim();
            }
        }
        return null;
    }

    /** groupId:artifactId to version, as the BOM manages them. */
    private static Map<String, String> managed() throws Exception {
        Map<String, String> managed = new LinkedHashMap<>();
        NodeList dependencies = read(ROOT.resolve("leasehold-bom/pom.xml")).getElementsByTagName("dependency");
        for (int i = 0; i < dependencies.getLength(); i++) {
            Element d = (Element) dependencies.item(i);
            managed.put(child(d, "groupId") + ":" + child(d, "artifactId"), child(d, "version"));
        }
        return managed;
    }

    @Test
    void everyPublishedModuleIsInTheBom() throws Exception {
        Document root = read(ROOT.resolve("pom.xml"));
        NodeList modules = root.getElementsByTagName("module");
        List<String> published = new ArrayList<>();
        for (int i = 0; i < modules.getLength(); i++) {
            Path pom = ROOT.resolve(modules.item(i).getTextContent().trim()).resolve("pom.xml");
            String text = Files.readString(pom);
            Element project = read(pom).getDocumentElement();
            if (!text.contains("<maven.deploy.skip>true</maven.deploy.skip>")
                    && !"pom".equals(child(project, "packaging"))) {
                published.add("dev.leasehold:" + child(project, "artifactId"));
            }
        }
        assertThat(published).contains("dev.leasehold:leasehold-etcd", "dev.leasehold:leasehold-core");
        assertThat(managed().keySet()).containsAll(published);
    }

    @Test
    void theBomManagesTheTestedH2Version() throws Exception {
        Element properties = (Element)
                read(ROOT.resolve("pom.xml")).getElementsByTagName("properties").item(0);
        String tested = child(properties, "h2.version");
        assertThat(tested).isNotBlank().doesNotStartWith("2.4.");
        String inBom = managed().get("com.h2database:h2");
        assertThat(inBom).as("H2 managed by the BOM").isNotNull();
        Element bomProperties = (Element) read(ROOT.resolve("leasehold-bom/pom.xml"))
                .getElementsByTagName("properties")
                .item(0);
        String resolved = inBom.startsWith("${") ? child(bomProperties, inBom.substring(2, inBom.length() - 1)) : inBom;
        assertThat(resolved).isEqualTo(tested);
    }
}
