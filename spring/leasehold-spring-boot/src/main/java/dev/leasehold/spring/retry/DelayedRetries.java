package dev.leasehold.spring.retry;

import dev.leasehold.LockBusyException;
import dev.leasehold.spring.LeaseholdRetryProperties;
import dev.leasehold.spring.internal.AnnotatedMethods;
import dev.leasehold.spring.internal.LeaseholdJson;
import dev.leasehold.spring.lock.Locked;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.context.ApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The delayed retries of {@code @Locked(onBusy = RETRY_LATER)} over a {@link RetryQueue}: a
 * background call that finds its key busy is stored as a {@link RetryTask} (bean, method, arguments
 * as JSON) and called again later through the bean's proxy, so it takes its lock again. Busy again:
 * rescheduled with a doubled delay; after {@code max-attempts}, or when the method throws, parked for
 * an operator. Nothing is dropped.
 *
 * <p>Delivery is at least once; a {@link RetryLedger} (request records, when configured) keeps a
 * redelivered task that already completed from running twice: a running retry's claim is renewed
 * for as long as it runs, its work commits in one transaction with the key's done mark, and a run
 * whose claim was lost rolls back and is delivered again. Delivery starts only when some bean
 * has a {@code RETRY_LATER} method or {@code leasehold.retry.enabled=true}, or on the first retry
 * stored. Thread-safe.
 */
public final class DelayedRetries implements RetryHandler, SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(DelayedRetries.class);

    private final RetryQueue queue;
    private final ApplicationContext context;
    private final LeaseholdJson json;
    private final LeaseholdRetryProperties settings;
    private final RetryLedger ledger;
    private final Consumer<String> events;
    private final ThreadLocal<Boolean> replaying = ThreadLocal.withInitial(() -> false);
    private volatile boolean delivering;

    DelayedRetries(
            RetryQueue queue,
            ApplicationContext context,
            LeaseholdJson json,
            LeaseholdRetryProperties settings,
            RetryLedger ledger,
            Consumer<String> events) {
        this.queue = queue;
        this.context = context;
        this.json = json;
        this.settings = settings;
        this.ledger = ledger;
        this.events = events;
    }

    RetryQueue queue() {
        return queue;
    }

    /** Whether the current thread runs a retry (a busy key then fails it, to be rescheduled). */
    public boolean replaying() {
        return replaying.get();
    }

    boolean delivering() {
        return delivering;
    }

    /** Stores a busy call for a later run; {@code retryKey} null for a key of its own. */
    public void schedule(
            MethodInvocation invocation, Method method, Class<?> targetClass, LockBusyException busy, String retryKey) {
        String bean = beanName(targetClass);
        List<String> types = new ArrayList<>();
        for (Class<?> type : method.getParameterTypes()) {
            types.add(type.getName());
        }
        String arguments;
        try {
            arguments = new String(json.write(invocation.getArguments()), java.nio.charset.StandardCharsets.UTF_8);
        } catch (LeaseholdJson.JsonFailure e) {
            throw new IllegalStateException(
                    "RETRY_LATER cannot store the arguments of " + method.getName() + " as JSON with " + json.describe()
                            + ": " + e.getMessage(),
                    e);
        }
        String key = RetryTask.keyOf(
                retryKey != null
                        ? bean + "." + method.getName() + ":" + retryKey
                        : UUID.randomUUID().toString());
        RetryTask task = new RetryTask(
                key, bean, method.getName(), types, arguments, busy.key().render(), 0);
        boolean stored = queue.enqueue(task, settings.getInitialDelay());
        startDelivery();
        events.accept(stored ? "scheduled" : "deduplicated");
        log.info(
                "lock {} busy: {}.{} {} for a retry in {} (retry {}, queue {})",
                busy.key(),
                bean,
                method.getName(),
                stored ? "stored" : "already stored",
                settings.getInitialDelay(),
                key,
                queue.name());
    }

    private String beanName(Class<?> targetClass) {
        String[] names = context.getBeanNamesForType(targetClass);
        if (names.length != 1) {
            throw new IllegalStateException(
                    "RETRY_LATER needs exactly one bean of " + targetClass.getName() + ", found " + names.length);
        }
        return names[0];
    }

    @Override
    public void handle(RetryTask task) throws Exception {
        RetryLedger.Entry entry = ledger.begin(task.key());
        switch (entry.state()) {
            case DONE -> {
                events.accept("duplicate");
                log.info(
                        "retry {} of {}.{} already completed: redelivery skipped",
                        task.key(),
                        task.bean(),
                        task.method());
                return;
            }
            case RUNNING_ELSEWHERE -> {
                queue.enqueue(task, settings.getInitialDelay());
                return;
            }
            case RUN -> {
                // run below
            }
        }
        Object bean;
        Method method;
        Object[] arguments;
        try {
            bean = context.getBean(task.bean());
            method = findMethod(ClassUtils.getUserClass(bean), task.method(), task.parameterTypes());
            arguments = arguments(method, task.arguments());
        } catch (RuntimeException | ClassNotFoundException e) {
            entry.failed(String.valueOf(e));
            park(task, "cannot call " + task.bean() + "." + task.method() + " again: " + e);
            return;
        }
        replaying.set(true);
        try {
            ReflectionUtils.makeAccessible(method);
            entry.run(() -> method.invoke(bean, arguments));
            events.accept("completed");
            log.info(
                    "retry {} of {}.{} completed after {} busy attempts",
                    task.key(),
                    task.bean(),
                    task.method(),
                    task.attempt() + 1);
        } catch (InvocationTargetException e) {
            // Rolled back and marked failed by the ledger: busy again is rescheduled, anything else parked.
            Throwable cause = e.getCause();
            if (cause instanceof LockBusyException && task.attempt() + 1 < settings.getMaxAttempts()) {
                queue.enqueue(task.nextAttempt(), backoff(task.attempt() + 1));
                events.accept("rescheduled");
            } else {
                park(task.nextAttempt(), String.valueOf(cause));
            }
        } catch (RetryLedger.ClaimLostException e) {
            // Another delivery owns the key now, or will: nothing of this run was committed.
            events.accept("lost");
            log.warn(
                    "retry {} of {}.{} lost its claim while it ran (taken over, or not renewed in time); its work"
                            + " was rolled back and the task is delivered again",
                    task.key(),
                    task.bean(),
                    task.method());
            throw e;
        } finally {
            replaying.remove();
        }
    }

    private Duration backoff(int attempt) {
        long initial = settings.getInitialDelay().toMillis();
        long delay = initial << Math.min(20, attempt);
        return Duration.ofMillis(Math.min(settings.getMaxDelay().toMillis(), delay));
    }

    private void park(RetryTask task, String error) {
        queue.park(task, error);
        events.accept("failed");
        log.error(
                "retry {} of {}.{} for lock {} parked for an operator: {}",
                task.key(),
                task.bean(),
                task.method(),
                task.lockKey(),
                error);
    }

    private Object[] arguments(Method method, String arguments) {
        return json.readArray(arguments, method.getGenericParameterTypes());
    }

    private static Method findMethod(Class<?> type, String name, List<String> types) throws ClassNotFoundException {
        Class<?>[] parameters = new Class<?>[types.size()];
        for (int i = 0; i < parameters.length; i++) {
            parameters[i] = ClassUtils.forName(types.get(i), type.getClassLoader());
        }
        Method method = ReflectionUtils.findMethod(type, name, parameters);
        if (method == null) {
            throw new IllegalStateException(
                    "method " + name + "(" + String.join(",", types) + ") no longer exists on " + type.getName());
        }
        return method;
    }

    private synchronized void startDelivery() {
        if (!delivering) {
            queue.start(this);
            delivering = true;
            log.info("delayed retries delivered from the {} queue", queue.name());
        }
    }

    @Override
    public void start() {
        Boolean enabled = settings.getEnabled();
        if (Boolean.TRUE.equals(enabled) || (enabled == null && usesRetryLater(context))) {
            startDelivery();
        }
    }

    @Override
    public synchronized void stop() {
        if (delivering) {
            queue.stop();
            delivering = false;
        }
    }

    @Override
    public boolean isRunning() {
        return delivering;
    }

    /** Whether a bean of {@code beans} has a {@code @Locked(onBusy = RETRY_LATER)} method. */
    private static boolean usesRetryLater(ListableBeanFactory beans) {
        return AnnotatedMethods.annotated(beans, Locked.class).stream()
                .anyMatch(m -> m.annotation().onBusy() == Locked.OnBusy.RETRY_LATER);
    }
}
