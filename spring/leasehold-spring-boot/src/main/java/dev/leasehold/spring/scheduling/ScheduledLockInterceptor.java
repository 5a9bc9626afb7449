package dev.leasehold.spring.scheduling;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.annotation.AnnotatedElementUtils;

/** Runs {@link ScheduledLock} methods through a {@link ScheduledTaskLock}. Thread-safe. */
public final class ScheduledLockInterceptor implements MethodInterceptor {

    private final Supplier<ScheduledTaskLock> lock;

    /** An interceptor over the lock {@code lock} supplies (looked up on first use). */
    public ScheduledLockInterceptor(Supplier<ScheduledTaskLock> lock) {
        this.lock = lock;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = invocation.getMethod();
        Class<?> target = invocation.getThis() == null
                ? method.getDeclaringClass()
                : AopUtils.getTargetClass(invocation.getThis());
        Method specific = AopUtils.getMostSpecificMethod(method, target);
        ScheduledLock annotation = AnnotatedElementUtils.findMergedAnnotation(specific, ScheduledLock.class);
        if (annotation == null) {
            return invocation.proceed();
        }
        if (specific.getReturnType() != void.class) {
            throw new IllegalStateException(
                    "@ScheduledLock needs a void method, " + target.getSimpleName() + "." + specific.getName()
                            + " returns " + specific.getReturnType().getSimpleName());
        }
        Duration atMost = DurationStyle.detectAndParse(annotation.lockAtMostFor());
        Duration atLeast = annotation.lockAtLeastFor().isEmpty()
                ? Duration.ZERO
                : DurationStyle.detectAndParse(annotation.lockAtLeastFor());
        Throwable[] failure = new Throwable[1];
        lock.get().runIfFree(annotation.name(), atMost, atLeast, () -> {
            try {
                invocation.proceed();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                failure[0] = t;
            }
        });
        if (failure[0] != null) {
            throw failure[0];
        }
        return null;
    }
}
