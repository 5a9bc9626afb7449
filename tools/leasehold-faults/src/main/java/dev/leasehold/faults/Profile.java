package dev.leasehold.faults;

import java.util.Locale;

/**
 * How much each scenario does: {@link #SHORT} is what every build runs (all scenarios, few
 * operations), {@link #LONG} what the report is made from.
 */
public enum Profile {
    /** Every scenario, few operations: minutes on two cores. */
    SHORT(1, 0),
    /**
     * Every scenario, several times the faults, each repeated until its history holds at least
     * 10 000 operations.
     */
    LONG(5, 10_000);

    private final int scale;
    private final int minOperations;

    Profile(int scale, int minOperations) {
        this.scale = scale;
        this.minOperations = minOperations;
    }

    /**
     * Whether a scenario that has done {@code done} rounds of its {@code base} and recorded {@code
     * operations} goes on with another round: until both {@link #times(int) times(base)} rounds and
     * this profile's least number of operations are reached (at most 100 times the rounds).
     */
    public boolean more(int done, int base, int operations) {
        int rounds = times(base);
        return done < rounds || (operations < minOperations && done < rounds * 100);
    }

    /** The least number of operations a scenario's history should hold (0: no least). */
    public int minOperations() {
        return minOperations;
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
