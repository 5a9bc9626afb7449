package dev.leasehold.spring;

import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.annotation.ImportCandidates;

/** Leasehold's auto-configurations as the starter registers them, for context runners. */
public final class LeaseholdAutoConfigurations {

    private LeaseholdAutoConfigurations() {}

    /** {@code others} followed by every Leasehold auto-configuration of the imports file. */
    public static Class<?>[] with(Class<?>... others) {
        List<Class<?>> all = new ArrayList<>(List.of(others));
        ClassLoader loader = LeaseholdAutoConfigurations.class.getClassLoader();
        for (String name : ImportCandidates.load(AutoConfiguration.class, loader)) {
            if (name.startsWith("dev.leasehold.")) {
                try {
                    all.add(Class.forName(name, false, loader));
                } catch (ClassNotFoundException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return all.toArray(Class<?>[]::new);
    }
}
