package dev.leasehold.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.actuator.LeaseholdMetricNames;
import dev.leasehold.spring.actuator.LeaseholdObservations;
import dev.leasehold.spring.lock.Locked;
import dev.leasehold.spring.web.Idempotent;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The metrics table of {@code docs/operations.md} lists every meter Leasehold registers: the names
 * of {@link LeaseholdMetricNames}, and every {@code leasehold.*} meter a locked call leaves in a
 * registry with Micrometer's observation handler after a locked and an idempotent call (the
 * observations' timers and their {@code .active} long-task twins). The example alert rule queries a meter of the table.
 */
class MetricsTableTest {

    private static final Path PAGE = Path.of("..", "..", "docs", "operations.md");

    @Test
    void theMetricsTableNamesEveryMeterLeaseholdRegisters() throws Exception {
        Set<String> table = tableNames();
        List<String> expected = new ArrayList<>();
        for (Field field : LeaseholdMetricNames.class.getFields()) {
            if (Modifier.isStatic(field.getModifiers()) && field.getType() == String.class) {
                expected.add((String) field.get(null));
            }
        }
        MeterRegistry meters = new SimpleMeterRegistry();
        ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        AopAutoConfiguration.class, DataSourceAutoConfiguration.class)))
                .withPropertyValues(
                        "spring.datasource.url=jdbc:h2:mem:metrics-table-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1",
                        "leasehold.stale-scan.enabled=false")
                .withBean(MeterRegistry.class, () -> meters)
                .withBean(ObservationRegistry.class, () -> observations)
                .withBean(Transfers.class)
                .withBean(Bookings.class)
                .run(context -> {
                    assertThat(context.getBean(Transfers.class).run("t-1")).isEqualTo("t-1");
                    assertThat(context.getBean(Bookings.class).book("b-1", 35)).isEqualTo("booked 35");
                    assertThat(context.getBean(Bookings.class).book("b-1", 35))
                            .as("replayed")
                            .isEqualTo("booked 35");
                });
        List<String> registered = meters.getMeters().stream()
                .map(Meter::getId)
                .map(Meter.Id::getName)
                .filter(name -> name.startsWith("leasehold."))
                .distinct()
                .toList();
        assertThat(registered)
                .as("the observation meters are registered")
                .contains(
                        LeaseholdObservations.ACQUIRE,
                        LeaseholdObservations.ACQUIRE + ".active",
                        LeaseholdObservations.HOLD,
                        LeaseholdObservations.HOLD + ".active",
                        LeaseholdObservations.IDEMPOTENT,
                        LeaseholdObservations.IDEMPOTENT + ".active");
        expected.addAll(registered);
        assertThat(table).as("meters in the table of docs/operations.md").containsAll(expected);
    }

    @Test
    void theExampleAlertRuleQueriesTheStaleLeaseGauge() throws Exception {
        String page = Files.readString(PAGE);
        String prometheus = LeaseholdMetricNames.LOCK_STALE.replace('.', '_');
        assertThat(page).contains("expr: max(" + prometheus + ") > 0");
        assertThat(tableNames()).contains(LeaseholdMetricNames.LOCK_STALE);
    }

    private static Set<String> tableNames() throws Exception {
        String page = Files.readString(PAGE);
        String metrics =
                page.substring(page.indexOf("## Metrics"), page.indexOf("\n## ", page.indexOf("## Metrics") + 1));
        Set<String> names = new TreeSet<>();
        Matcher row = Pattern.compile("(?m)^\\| `([a-z0-9.]+)` \\|").matcher(metrics);
        while (row.find()) {
            names.add(row.group(1));
        }
        return names;
    }

    /** An idempotent method, whose execution is observed too. */
    public static class Bookings {
        @Idempotent(key = "#key", scope = "'bookings'", perCaller = false)
        public String book(String key, int amount) {
            return "booked " + amount;
        }
    }

    /** A locked method, the call the observations meter. */
    public static class Transfers {
        @Locked(namespace = "transfer", key = "#id")
        public String run(String id) {
            return id;
        }
    }
}
