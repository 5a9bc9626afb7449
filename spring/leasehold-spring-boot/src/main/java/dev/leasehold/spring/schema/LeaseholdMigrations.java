package dev.leasehold.spring.schema;

import dev.leasehold.jdbc.Database;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

/**
 * Leasehold's versioned migration scripts for one database, as every Leasehold jar on the class
 * path ships them under {@code db/leasehold/<vendor>/V<version>__<description>.sql}.
 *
 * <p>Versions are numbered by module so that modules never collide: {@code leasehold-jdbc} owns
 * 1, 1.1, 1.2 ...; {@code leasehold-idempotency} 2, 2.1 ...; {@code leasehold-spring-boot} 3, 3.1
 * .... They run in version order, through Leasehold's own Flyway history table or, without Flyway,
 * Spring Boot's script initializer; with the latter every script must be safe to run again (they
 * only create what is missing).
 */
public final class LeaseholdMigrations {

    private static final Pattern NAME = Pattern.compile("V([0-9]+(?:[._][0-9]+)*)__[^/]+\\.sql");

    private LeaseholdMigrations() {}

    /** The Flyway location of Leasehold's scripts for {@code database}. */
    public static String location(Database database) {
        return "classpath:" + database.migrationLocation();
    }

    /**
     * The scripts for {@code database}, in version order.
     *
     * @throws IllegalStateException if a file is misnamed or two share a version
     */
    public static List<Resource> scripts(Database database, ClassLoader classLoader) {
        Resource[] found;
        try {
            found = new PathMatchingResourcePatternResolver(classLoader)
                    .getResources("classpath*:" + database.migrationLocation() + "/*.sql");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<Resource> scripts = new ArrayList<>(Arrays.asList(found));
        scripts.sort(Comparator.comparing(LeaseholdMigrations::version, LeaseholdMigrations::compare));
        for (int i = 1; i < scripts.size(); i++) {
            if (compare(version(scripts.get(i - 1)), version(scripts.get(i))) == 0) {
                throw new IllegalStateException("two Leasehold migrations share a version: "
                        + scripts.get(i - 1).getFilename() + " and "
                        + scripts.get(i).getFilename());
            }
        }
        return scripts;
    }

    static List<BigInteger> version(Resource script) {
        String name = script.getFilename();
        Matcher matcher = NAME.matcher(name == null ? "" : name);
        if (!matcher.matches()) {
            throw new IllegalStateException(
                    "Leasehold migration " + name + " is not named V<version>__<description>.sql");
        }
        List<BigInteger> parts = new ArrayList<>();
        for (String part : matcher.group(1).split("[._]")) {
            parts.add(new BigInteger(part));
        }
        // 1 and 1.0 are the same version for Flyway: drop trailing zeros.
        while (parts.size() > 1 && parts.get(parts.size() - 1).signum() == 0) {
            parts.remove(parts.size() - 1);
        }
        return parts;
    }

    private static int compare(List<BigInteger> a, List<BigInteger> b) {
        for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
            BigInteger x = i < a.size() ? a.get(i) : BigInteger.ZERO;
            BigInteger y = i < b.size() ? b.get(i) : BigInteger.ZERO;
            int c = x.compareTo(y);
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }
}
