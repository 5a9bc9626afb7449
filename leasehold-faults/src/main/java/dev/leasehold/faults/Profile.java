package dev.leasehold.faults;

import java.util.Locale;

/**
 * How much each scenario does: {@link #SHORT} is what every build runs (all scenarios, few
 * operations), {@link #LONG} what the report is made from.
 */
public enum Profile {
    /** Every scenario, few operations: minutes on two cores. */
    SHORT(1),
    /** Every scenario, several times the operations. */
    LONG(5);

    private final int scale;

    Profile(int scale) {
        this.scale = scale;
    }

    /** {@code base} operations scaled for this profile. */
    public int times(int base) {
        return base * scale;
    }

    /**
     * The profile named {@code name} ({@code short} or {@code long}).
     *
     * @throws IllegalArgumentException naming the value otherwise
     */
    public static Profile parse(String name) {
        if (name == null) {
            return SHORT;
        }
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "short", "" -> SHORT;
            case "long" -> LONG;
            default -> throw new IllegalArgumentException("profile must be 'short' or 'long', was '" + name + "'");
        };
    }

    /** The profile of this JVM: system property {@code faults.profile}, default short. */
    public static Profile current() {
        return parse(System.getProperty("faults.profile"));
    }
}
