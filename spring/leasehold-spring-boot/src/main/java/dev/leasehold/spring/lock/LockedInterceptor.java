package dev.leasehold.spring.lock;

import dev.leasehold.Lease;
import dev.leasehold.LeaseGroup;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.actuator.LeaseholdObservations;
import dev.leasehold.spring.internal.AnnotatedMethods;
import dev.leasehold.spring.internal.KeyExpressions;
import dev.leasehold.spring.retry.DelayedRetries;
import io.micrometer.observation.Observation;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.EvaluationContext;
import org.springframework.util.ClassUtils;

/**
 * Runs {@link Locked} methods under their leases. Ordered before the transaction interceptor, so
 * the lease is taken before the transaction begins and released after it commits; if the
 * method is called inside a caller's transaction, the release waits for that transaction to
 * complete. A transaction that would commit the method's writes (its own, or the caller's it
 * joined) checks just before it commits that every lease is still held, locally and in the store,
 * and rolls back with {@link dev.leasehold.LeaseLostException} if one is not. A release that fails
 * after the method completed never replaces its result or its exception (the lease then ends at
 * its expiry). Thread-safe.
 */
final class LockedInterceptor implements MethodInterceptor {

    private static final Logger log = LoggerFactory.getLogger(LockedInterceptor.class);
    private static final boolean TRANSACTIONS =
            ClassUtils.isPresent("org.springframework.transaction.support.TransactionSynchronizationManager", null);

    private final Supplier<LockService> locks;
    private final LeaseholdProperties properties;
    private final Supplier<LockModeSwitch> mode;
    private final KeyExpressions expressions = new KeyExpressions();
    private final Consumer<String> bypassCounter;
    private final Supplier<DelayedRetries> retries;
    private final LeaseholdObservations observations;

    /** Services are looked up on first use, so the advisor does not create them early. */
    LockedInterceptor(
            Supplier<LockService> locks,
            LeaseholdProperties properties,
            Supplier<LockModeSwitch> mode,
            Consumer<String> bypassCounter,
            Supplier<DelayedRetries> retries,
            LeaseholdObservations observations) {
        this.locks = locks;
        this.properties = properties;
        this.mode = mode;
        this.bypassCounter = bypassCounter;
        this.retries = retries;
        this.observations = observations;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = invocation.getMethod();
        Class<?> targetClass = invocation.getThis() == null
                ? method.getDeclaringClass()
                : AopUtils.getTargetClass(invocation.getThis());
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        Locked locked = AnnotatedElementUtils.findMergedAnnotation(specific, Locked.class);
        if (locked == null) {
            return invocation.proceed();
        }
        if (AnnotatedMethods.isAsync(specific.getReturnType())) {
            // Normally refused at startup; a bean created later is refused here, before anything is locked.
            throw new IllegalStateException(
                    "@Locked cannot protect " + specific.getDeclaringClass().getSimpleName() + "."
                            + specific.getName() + ": it returns "
                            + specific.getReturnType().getSimpleName()
                            + " and the lease would be released before the asynchronous work runs");
        }
        List<LockKey> keys = keys(locked, specific, invocation.getArguments());
        if (mode.get().bypassed()) {
            bypassCounter.accept(locked.namespace());
            log.warn("lock BYPASSED (lock-mode=BYPASS) for {} keys={}", specific.getName(), keys);
            LockedContext.Scope bypassed = LockedContext.bindBypassed();
            try {
                return invocation.proceed();
            } finally {
                bypassed.close();
            }
        }
        LeaseOptions options = LeaseOptions.builder()
                .leaseFor(duration(locked.leaseFor(), properties.getLock().getLeaseTime()))
                .waitFor(duration(locked.waitFor(), properties.getLock().getWaitTime()))
                .build();
        AutoCloseable held;
        Observation acquire = observations.startAcquire(keys);
        try {
            LockService service = locks.get();
            held = keys.size() == 1 ? service.acquire(keys.get(0), options) : service.acquireAll(keys, options);
            LeaseholdObservations.outcome(acquire, "acquired");
        } catch (LockBusyException busy) {
            LeaseholdObservations.outcome(acquire, "busy");
            DelayedRetries delayed = locked.onBusy() == Locked.OnBusy.RETRY_LATER ? retries.get() : null;
            if (locked.onBusy() == Locked.OnBusy.RETRY_LATER && delayed == null) {
                throw new IllegalStateException(
                        "@Locked(onBusy = RETRY_LATER) needs a retry queue (a DataSource, or Spring AMQP with a"
                                + " RabbitMQ connection factory) and leasehold.retry.enabled not false",
                        busy);
            }
            if (delayed != null && !delayed.replaying()) {
                String retryKey = locked.retryKey().isEmpty()
                        ? null
                        : KeyExpressions.text(expressions.value(
                                locked.retryKey(), expressions.context(specific, invocation.getArguments())));
                delayed.schedule(invocation, specific, targetClass, busy, retryKey);
                return null;
            }
            throw message(locked, busy);
        } catch (RuntimeException e) {
            LeaseholdObservations.outcome(acquire, "error").error(e);
            throw e;
        } finally {
            acquire.stop();
        }
        Observation hold = observations.startHold(keys);
        AutoCloseable observed = () -> {
            try {
                close(held);
            } finally {
                hold.stop();
            }
        };
        Observation.Scope scope = null;
        LockedContext.Scope bound = null;
        try {
            // Everything after the acquire sits inside the try: if any step throws, the lease is released.
            scope = hold.openScope();
            LockService service = locks.get();
            List<Lease> leases = held instanceof Lease lease
                    ? List.of(lease)
                    : held instanceof LeaseGroup group ? group.leases() : List.of();
            Runnable commitCheck = () -> LockedCommitCheck.verify(service, leases);
            if (TRANSACTIONS) {
                // Inside a caller's transaction: it is the one that commits this method's writes.
                LockedCommitCheck.registerBeforeCommit(commitCheck);
            }
            bound = LockedContext.bind(held, commitCheck);
            return invocation.proceed();
        } catch (Throwable t) {
            hold.error(t);
            throw t;
        } finally {
            try {
                if (bound != null) {
                    bound.close();
                }
                if (scope != null) {
                    scope.close();
                }
            } finally {
                releaseAfterTransaction(observed, keys);
            }
        }
    }

    private List<LockKey> keys(Locked locked, Method method, Object[] arguments) {
        if (locked.onBusy() == Locked.OnBusy.RETRY_LATER && method.getReturnType() != void.class) {
            throw new IllegalStateException("@Locked(onBusy = RETRY_LATER) needs a void method, "
                    + method.getDeclaringClass().getSimpleName() + "." + method.getName() + " returns "
                    + method.getReturnType().getSimpleName());
        }
        try {
            EvaluationContext context = expressions.context(method, arguments);
            String tenant =
                    locked.tenant().isEmpty() ? null : KeyExpressions.text(expressions.value(locked.tenant(), context));
            if (!locked.tenant().isEmpty() && (tenant == null || tenant.isBlank())) {
                throw new InvalidLockKeyException("the tenant of lock " + locked.namespace() + " is missing", null);
            }
            List<List<Object>> parts = new ArrayList<>();
            int batchPart = -1;
            for (int i = 0; i < locked.key().length; i++) {
                Object value = expressions.value(locked.key()[i], context);
                List<Object> values = KeyExpressions.elements(value);
                if (isMany(value)) {
                    if (batchPart >= 0) {
                        throw new IllegalStateException("@Locked allows one collection-valued key part, found two");
                    }
                    batchPart = i;
                }
                parts.add(values);
            }
            int count = batchPart < 0 ? 1 : parts.get(batchPart).size();
            if (count == 0) {
                throw new InvalidLockKeyException("the key list of lock " + locked.namespace() + " is empty", null);
            }
            List<LockKey> keys = new ArrayList<>(count);
            for (int k = 0; k < count; k++) {
                String[] ids = new String[parts.size()];
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = KeyExpressions.text(parts.get(i).get(i == batchPart ? k : 0));
                }
                keys.add(
                        tenant == null
                                ? LockKey.of(locked.namespace(), ids)
                                : LockKey.ofTenant(locked.namespace(), tenant, ids));
            }
            return keys;
        } catch (InvalidLockKeyException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw new InvalidLockKeyException(e.getMessage(), e);
        }
    }

    private static boolean isMany(Object value) {
        return value instanceof java.util.Collection<?> || value instanceof Object[];
    }

    private static Duration duration(String text, Duration fallback) {
        return text.isEmpty() ? fallback : DurationStyle.detectAndParse(text);
    }

    private static LockBusyException message(Locked locked, LockBusyException busy) {
        if (locked.busyMessage().isEmpty()) {
            return busy;
        }
        List<String> ids = busy.key().ids();
        String text =
                locked.busyMessage().replace("{key}", busy.key().render()).replace("{id}", ids.get(ids.size() - 1));
        return new LockBusyException(busy.key(), busy.waited(), text);
    }

    /**
     * Releases after the method's transaction (or the caller's) completed. A release that fails then
     * changes nothing of what the method did: its result or its own exception reaches the caller,
     * the lease ends at its expiry in the store, and the failure is logged here once, with its cause
     * (the engine's RELEASED event carries it to the meters).
     */
    private static void releaseAfterTransaction(AutoCloseable held, List<LockKey> keys) throws Exception {
        if (TRANSACTIONS && TransactionRelease.deferIfInTransaction(held)) {
            return;
        }
        try {
            close(held);
        } catch (RuntimeException e) {
            log.warn("release of {} failed after the method completed; the lease ends at its expiry", keys, e);
        }
    }

    static void close(AutoCloseable held) throws Exception {
        if (held instanceof Lease lease) {
            lease.close();
        } else if (held instanceof LeaseGroup group) {
            group.close();
        } else {
            held.close();
        }
    }
}
