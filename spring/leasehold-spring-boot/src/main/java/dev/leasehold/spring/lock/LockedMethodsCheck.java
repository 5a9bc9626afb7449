package dev.leasehold.spring.lock;

import dev.leasehold.spring.internal.AnnotatedMethods;
import java.util.ArrayList;
import java.util.List;
import org.springframework.aop.Advisor;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.core.Ordered;
import org.springframework.util.ClassUtils;

/**
 * Checks the application's {@link Locked} methods once every singleton exists, and fails startup
 * with a message naming the method instead of letting it run unprotected:
 *
 * <ul>
 *   <li>an asynchronous return type ({@code CompletableFuture}, any {@code Future} or {@code
 *       CompletionStage}, a Reactive Streams {@code Publisher} such as {@code Mono}): the lease
 *       would be released when the method returns, before its work runs;
 *   <li>{@code RETRY_LATER} on a method that returns a value (a retry has no caller to return to);
 *   <li>the transaction advisor ordered at or before the {@code @Locked} advisor: the lease must be
 *       taken before the transaction begins and released after it ends.
 * </ul>
 */
final class LockedMethodsCheck implements SmartInitializingSingleton {

    private static final String TRANSACTION_ADVISOR =
            "org.springframework.transaction.interceptor.BeanFactoryTransactionAttributeSourceAdvisor";

    private final ListableBeanFactory beans;
    private final int lockedOrder;

    LockedMethodsCheck(ListableBeanFactory beans, int lockedOrder) {
        this.beans = beans;
        this.lockedOrder = lockedOrder;
    }

    @Override
    public void afterSingletonsInstantiated() {
        List<LockedMethods.Found> methods = LockedMethods.scan(beans);
        List<String> problems = new ArrayList<>();
        for (LockedMethods.Found found : methods) {
            Class<?> returns = found.method().getReturnType();
            if (AnnotatedMethods.isAsync(returns)) {
                problems.add(found.describe() + " returns " + returns.getSimpleName()
                        + ": @Locked releases the lease when the method returns, before asynchronous work runs;"
                        + " lock inside the asynchronous task, or return its result synchronously");
            }
            if (found.locked().onBusy() == Locked.OnBusy.RETRY_LATER && returns != void.class) {
                problems.add(found.describe() + " returns " + returns.getSimpleName()
                        + ": @Locked(onBusy = RETRY_LATER) needs a void method (a retry has no caller to return to)");
            }
        }
        if (!methods.isEmpty()) {
            checkTransactionOrder(problems);
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException(
                    "Leasehold cannot protect these @Locked methods:\n  - " + String.join("\n  - ", problems));
        }
    }

    private void checkTransactionOrder(List<String> problems) {
        if (!ClassUtils.isPresent(TRANSACTION_ADVISOR, LockedMethodsCheck.class.getClassLoader())) {
            return;
        }
        for (String name : beans.getBeanNamesForType(Advisor.class, false, false)) {
            Object advisor = beans.getBean(name);
            if (advisor.getClass().getName().equals(TRANSACTION_ADVISOR) && advisor instanceof Ordered ordered) {
                if (ordered.getOrder() <= lockedOrder) {
                    problems.add("the transaction advisor '" + name + "' has order " + ordered.getOrder()
                            + ", at or before @Locked's " + lockedOrder + ": transactions would begin before the"
                            + " lease is taken and end after it is released; give leasehold.lock.advisor-order a"
                            + " value below " + ordered.getOrder() + " (or @EnableTransactionManagement(order) a"
                            + " higher one)");
                }
            }
        }
    }
}
