package dev.leasehold.spring.internal;

import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;

/** Creates its interceptor on the first call, so advisors do not pull services in during startup. */
public final class LazyInterceptor<T extends MethodInterceptor> implements MethodInterceptor {

    private final Supplier<T> factory;
    private volatile T interceptor;

    public LazyInterceptor(Supplier<T> factory) {
        this.factory = factory;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        T current = interceptor;
        if (current == null) {
            synchronized (this) {
                current = interceptor;
                if (current == null) {
                    current = factory.get();
                    interceptor = current;
                }
            }
        }
        return current.invoke(invocation);
    }
}
