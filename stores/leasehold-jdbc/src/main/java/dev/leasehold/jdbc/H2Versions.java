package dev.leasehold.jdbc;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The H2 versions the SQL store refuses to be built on. H2 2.x before 2.5 can fail a read of
 * {@code INFORMATION_SCHEMA.SESSIONS}, which every statement of the store makes for the database's
 * clock, with an internal {@code NullPointerException} while another session ends its transaction
 * (h2database issue 4352, reported on 2.1.214 and 2.4.240): under concurrent use acquires and
 * releases then fail as if the store were down; {@value #TESTED} does not.
 */
final class H2Versions {

    /** The H2 version the store is tested with (the build's and the BOM's). */
    static final String TESTED = "2.5.252";

    private static final Pattern VERSION = Pattern.compile("^\\s*(\\d+)\\.(\\d+)\\.(\\d+)");

    private H2Versions() {}

    /**
     * Why the store refuses H2 of this product version ({@code DatabaseMetaData#getDatabaseProductVersion},
     * such as {@code 2.4.240 (2025-09-22)}), naming the version and the fix; {@code null} when the
     * version is accepted, or cannot be read.
     */
    static String refusal(String productVersion) {
        if (productVersion == null) {
            return null;
        }
        Matcher version = VERSION.matcher(productVersion);
        if (!version.find()) {
            return null;
        }
        int major = Integer.parseInt(version.group(1));
        int minor = Integer.parseInt(version.group(2));
        if (major != 2 || minor >= 5) {
            return null;
        }
        String found = version.group(1) + "." + version.group(2) + "." + version.group(3);
        return "H2 " + found + " fails the SQL lease store's statements under concurrent use: H2 before 2.5 can"
                + " answer a read of INFORMATION_SCHEMA.SESSIONS with an internal NullPointerException while"
                + " another session ends its transaction (h2database issue 4352), and the store would report"
                + " itself unavailable. Use H2 " + TESTED + ", the version Leasehold is tested with: import"
                + " dev.leasehold:leasehold-bom before Spring Boot's dependencies, or with"
                + " spring-boot-starter-parent set the property <h2.version>" + TESTED + "</h2.version>";
    }
}
