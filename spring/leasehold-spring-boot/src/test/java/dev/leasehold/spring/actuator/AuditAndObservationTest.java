package dev.leasehold.spring.actuator;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.internal.AuditLine;
import dev.leasehold.spring.lock.Locked;
import dev.leasehold.spring.web.IdempotencyKeyReusedException;
import dev.leasehold.spring.web.Idempotent;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;
import org.slf4j.event.KeyValuePair;
import org.springframework.boot.actuate.audit.AuditEvent;
import org.springframework.boot.actuate.audit.AuditEventRepository;
import org.springframework.boot.actuate.audit.InMemoryAuditEventRepository;
import org.springframework.boot.actuate.audit.listener.AuditListener;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** Structured, escaped audit events; Actuator audit events for operators; observations; meters. */
@ExtendWith(OutputCaptureExtension.class)
class AuditAndObservationTest {

    private final ApplicationContextRunner memory = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)))
            .withPropertyValues("leasehold.backend=memory", "leasehold.stale-scan.enabled=false");

    @Test
    void aNewlineInARefusedForceReleaseKeyCannotForgeALine(CapturedOutput output) {
        memory.run(context -> {
            LeaseholdEndpoint endpoint = context.getBean(LeaseholdEndpoint.class);
            String forged = "acct:t1:A1\nforce-release key=acct:t1:A1 reason=\"approved\" removed=true by=admin";
            endpoint.forceRelease(forged, "because", SecurityContext.NONE);
        });
        List<String> lines = output.getAll().lines().toList();
        assertThat(lines)
                .filteredOn(line -> line.contains("removed=true"))
                .as("the only line that mentions the forged text is the refusal, with the newline escaped")
                .singleElement()
                .satisfies(line -> assertThat(line)
                        .contains("event=force-release.refused by=\"anonymous\" key=\"acct:t1:A1\\nforce-release"));
        assertThat(lines).noneMatch(line -> line.startsWith("force-release"));
    }

    @Test
    void auditEventsCarryKeyValuePairs() {
        Logger audit = (Logger) LoggerFactory.getLogger(AuditLine.LOGGER);
        ListAppender<ILoggingEvent> events = new ListAppender<>();
        events.start();
        audit.addAppender(events);
        try {
            LockService locks = LockService.builder(new InMemoryLeaseStore())
                    .listener(new AuditLog())
                    .build();
            try (var lease = locks.tryAcquire(LockKey.of("audit", "k1"), LeaseOptions.defaults(), LockOwner.create("w"))
                    .orElseThrow()) {
                assertThat(lease.fence()).isPositive();
            }
            locks.close();
        } finally {
            audit.detachAppender(events);
        }
        ILoggingEvent acquired = events.list.stream()
                .filter(e -> e.getFormattedMessage().startsWith("event=lease.acquired "))
                .findFirst()
                .orElseThrow();
        Map<String, Object> pairs =
                acquired.getKeyValuePairs().stream().collect(Collectors.toMap(p -> p.key, p -> p.value));
        assertThat(pairs)
                .containsEntry("event", "lease.acquired")
                .containsEntry("key", "audit:k1")
                .containsKeys("owner", "fence", "waitMs", "holdMs", "backend", "host");
        assertThat(events.list).anySatisfy(e -> assertThat(e.getKeyValuePairs())
                .extracting(KeyValuePair::toString)
                .contains("event=\"lease.released\""));
    }

    @Test
    void refusedAndGrantedAdminActionsAreActuatorAuditEvents() {
        InMemoryAuditEventRepository repository = new InMemoryAuditEventRepository();
        // What Actuator's audit auto-configuration registers when the application has a repository.
        memory.withBean(AuditEventRepository.class, () -> repository)
                .withBean(AuditListener.class, () -> new AuditListener(repository))
                .run(context -> {
                    LockService locks = context.getBean(LockService.class);
                    var lease = locks.tryAcquire(LockKey.of("ops", "1"), LeaseOptions.defaults())
                            .orElseThrow();
                    context.getBean(LeaseholdEndpoint.class).forceRelease("ops:1", "stuck", SecurityContext.NONE);
                    context.getBean(LeaseholdEndpoint.class)
                            .forceRelease("ops:1", "ticket OPS-1", new Operator("alice", "LEASEHOLD_ADMIN"));
                    context.getBean(LeaseholdModeEndpoint.class).change("bypass", "incident", SecurityContext.NONE);
                    assertThat(lease.isHeld()).isFalse();
                    List<AuditEvent> stored =
                            context.getBean(AuditEventRepository.class).find(null, null, null);
                    assertThat(stored)
                            .extracting(AuditEvent::getType)
                            .containsExactly(
                                    AdminAudit.FORCE_RELEASE_DENIED,
                                    AdminAudit.FORCE_RELEASE,
                                    AdminAudit.MODE_CHANGE_DENIED);
                    assertThat(stored.get(1).getPrincipal()).isEqualTo("alice");
                    assertThat(stored.get(1).getData())
                            .containsEntry("key", "ops:1")
                            .containsEntry("reason", "ticket OPS-1")
                            .containsEntry("removed", true);
                    lease.close();
                });
    }

    /** A caller with one role. */
    record Operator(String name, String role) implements SecurityContext {
        @Override
        public java.security.Principal getPrincipal() {
            return () -> name;
        }

        @Override
        public boolean isUserInRole(String wanted) {
            return role.equals(wanted);
        }
    }

    /** A locked method for the observation test. */
    public static class Transfers {
        @Locked(namespace = "transfer", key = "#id")
        public String run(String id) {
            return id;
        }
    }

    /** Names of the observations stopped in {@code registry}, in order. */
    private static List<String> recordStops(ObservationRegistry registry) {
        List<String> stopped = new java.util.concurrent.CopyOnWriteArrayList<>();
        registry.observationConfig().observationHandler(new io.micrometer.observation.ObservationHandler<>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }

            @Override
            public void onStop(Observation.Context context) {
                stopped.add(context.getName());
            }
        });
        return stopped;
    }

    @Test
    void acquireAndHoldAreObservedWithTheirOutcome() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        List<String> stopped = recordStops(registry);
        memory.withBean(ObservationRegistry.class, () -> registry)
                .withBean(Transfers.class)
                .run(context -> {
                    assertThat(context.getBean(Transfers.class).run("t-1")).isEqualTo("t-1");
                    LockService locks = context.getBean(LockService.class);
                    try (var held = locks.tryAcquire(
                                    LockKey.of("transfer", "t-2"), LeaseOptions.defaults(), LockOwner.create("other"))
                            .orElseThrow()) {
                        assertThat(held.isHeld()).isTrue();
                        org.assertj.core.api.Assertions.assertThatThrownBy(
                                        () -> context.getBean(Transfers.class).run("t-2"))
                                .isInstanceOf(dev.leasehold.LockBusyException.class);
                    }
                });
        TestObservationRegistryAssert.assertThat(registry)
                .hasNumberOfObservationsWithNameEqualTo(LeaseholdObservations.ACQUIRE, 2)
                .hasNumberOfObservationsWithNameEqualTo(LeaseholdObservations.HOLD, 1)
                .hasAnObservation(o -> o.hasNameEqualTo(LeaseholdObservations.ACQUIRE)
                        .hasLowCardinalityKeyValue("outcome", "acquired")
                        .hasLowCardinalityKeyValue("namespace", "transfer")
                        .hasHighCardinalityKeyValue("key", "transfer:t-1"))
                .hasAnObservation(o ->
                        o.hasNameEqualTo(LeaseholdObservations.ACQUIRE).hasLowCardinalityKeyValue("outcome", "busy"));
        assertThat(stopped)
                .as("every observation is stopped, the hold one at release")
                .containsExactlyInAnyOrder(
                        LeaseholdObservations.ACQUIRE, LeaseholdObservations.HOLD, LeaseholdObservations.ACQUIRE);
    }

    /** An idempotent booking: counts its runs. */
    public static class Bookings {
        final java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();

        @Idempotent(key = "#key", scope = "'bookings'", perCaller = false)
        public String book(String key, int amount) {
            runs.incrementAndGet();
            return "booked " + amount;
        }

        public int runs() {
            return runs.get();
        }
    }

    @Test
    void idempotentMethodIsObservedWithItsOutcome() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        List<String> stopped = recordStops(registry);
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        AopAutoConfiguration.class,
                        org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration.class)))
                .withPropertyValues(
                        "spring.datasource.url=jdbc:h2:mem:observed-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                        "leasehold.stale-scan.enabled=false")
                .withBean(ObservationRegistry.class, () -> registry)
                .withBean(Bookings.class)
                .run(context -> {
                    Bookings bookings = context.getBean(Bookings.class);
                    assertThat(bookings.book("b-1", 35)).isEqualTo("booked 35");
                    assertThat(bookings.book("b-1", 35)).isEqualTo("booked 35");
                    org.assertj.core.api.Assertions.assertThatThrownBy(() -> bookings.book("b-1", 36))
                            .isInstanceOf(IdempotencyKeyReusedException.class);
                    assertThat(bookings.runs()).isEqualTo(1);
                });
        TestObservationRegistryAssert.assertThat(registry)
                .hasNumberOfObservationsWithNameEqualTo(LeaseholdObservations.IDEMPOTENT, 3)
                .hasAnObservation(o -> o.hasNameEqualTo(LeaseholdObservations.IDEMPOTENT)
                        .hasLowCardinalityKeyValue("outcome", "executed")
                        .hasHighCardinalityKeyValue("scope", "bookings"))
                .hasAnObservation(o -> o.hasNameEqualTo(LeaseholdObservations.IDEMPOTENT)
                        .hasLowCardinalityKeyValue("outcome", "replayed"))
                .hasAnObservation(o -> o.hasNameEqualTo(LeaseholdObservations.IDEMPOTENT)
                        .hasLowCardinalityKeyValue("outcome", "mismatch")
                        .assertThatError()
                        .isInstanceOf(IdempotencyKeyReusedException.class));
        assertThat(stopped)
                .as("each call's observation is stopped")
                .containsExactly(
                        LeaseholdObservations.IDEMPOTENT,
                        LeaseholdObservations.IDEMPOTENT,
                        LeaseholdObservations.IDEMPOTENT);
    }

    @Test
    void theIdempotentHookObservesOneExecution() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        List<String> stopped = recordStops(registry);
        Observation observation = new LeaseholdObservations(registry).startIdempotent("pay:A1");
        LeaseholdObservations.outcome(observation, "executed").stop();
        TestObservationRegistryAssert.assertThat(registry)
                .hasSingleObservationThat()
                .hasNameEqualTo(LeaseholdObservations.IDEMPOTENT)
                .hasHighCardinalityKeyValue("scope", "pay:A1")
                .hasLowCardinalityKeyValue("outcome", "executed");
        assertThat(stopped).containsExactly(LeaseholdObservations.IDEMPOTENT);
    }

    @Test
    void everyMeterHasADescriptionAndBusyIsCountedOnce() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        LeaseholdMetrics metrics = new LeaseholdMetrics(registry);
        LockService locks =
                LockService.builder(new InMemoryLeaseStore()).listener(metrics).build();
        LockKey key = LockKey.of("meters", "1");
        for (int i = 0; i < 50; i++) {
            try (var lease = locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
                assertThat(locks.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("other")))
                        .isEmpty();
                assertThat(lease.isHeld()).isTrue();
            }
        }
        metrics.bypassed("meters");
        metrics.retry("scheduled");
        metrics.idempotency("executed");
        locks.close();
        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getDescription())
                .as(m.getId().getName())
                .isNotBlank());
        assertThat(registry.getMeters()).extracting(m -> m.getId().getName()).doesNotContain("leasehold.lock.busy");
        assertThat(registry.find(LeaseholdMetricNames.LOCK_WAIT)
                        .tag("outcome", "busy")
                        .timer()
                        .count())
                .isEqualTo(50);
        assertThat(registry.getMeters().stream().map(Meter::getId).distinct())
                .hasSize(registry.getMeters().size());
    }
}
