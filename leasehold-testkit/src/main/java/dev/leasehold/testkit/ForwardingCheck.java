package dev.leasehold.testkit;

import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.LeaseStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Checks that a store decorator passes every {@link LeaseStore} method on to the store it wraps,
 * with the same arguments: each method of the SPI, the default ones included, is called once on
 * the decorator over a recording store, and must reach that store as the same call. A decorator
 * that forgets a default method falls back to the interface's default, which asks the wrapped store
 * another way or not at all (a waiter's request turned into a plain acquire, a queue never left).
 */
public final class ForwardingCheck {

    private static final LockKey KEY = LockKey.of("forwarding", "k");
    private static final String OWNER = "0123456789abcdef0123456789abcdef";
    private static final Duration LEASE = Duration.ofSeconds(7);

    private ForwardingCheck() {}

    /** The SPI's methods a decorator must pass on: every instance method of {@link LeaseStore}. */
    public static List<Method> spiMethods() {
        List<Method> methods = new ArrayList<>();
        for (Method method : LeaseStore.class.getMethods()) {
            if (!Modifier.isStatic(method.getModifiers())) {
                methods.add(method);
            }
        }
        methods.sort((a, b) -> a.toString().compareTo(b.toString()));
        return methods;
    }

    /**
     * The calls that did not reach the wrapped store as they were made, one line each; empty when
     * {@code decorate} passes every method on. {@code names} lists methods the decorator answers
     * itself by design (such as {@code name}); they are skipped.
     */
    public static List<String> unforwarded(Function<LeaseStore, LeaseStore> decorate, String... answeredItself) {
        List<String> skipped = Arrays.asList(answeredItself);
        List<String> problems = new ArrayList<>();
        for (Method method : spiMethods()) {
            if (skipped.contains(method.getName())) {
                continue;
            }
            List<Object[]> calls = new ArrayList<>();
            List<Method> reached = new ArrayList<>();
            LeaseStore recording = (LeaseStore) Proxy.newProxyInstance(
                    LeaseStore.class.getClassLoader(), new Class<?>[] {LeaseStore.class}, (proxy, called, args) -> {
                        if (called.getDeclaringClass() == Object.class) {
                            return called.getName().equals("equals")
                                    ? proxy == args[0]
                                    : called.getName().equals("hashCode") ? System.identityHashCode(proxy) : "recorder";
                        }
                        reached.add(called);
                        calls.add(args == null ? new Object[0] : args);
                        return answer(called.getReturnType());
                    });
            Object[] args = arguments(method);
            try {
                method.invoke(decorate.apply(recording), args);
            } catch (InvocationTargetException e) {
                problems.add(signature(method) + " threw " + e.getCause());
                continue;
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            boolean passedOn = false;
            for (int i = 0; i < reached.size(); i++) {
                if (reached.get(i).equals(method) && Arrays.equals(calls.get(i), args)) {
                    passedOn = true;
                }
            }
            if (!passedOn) {
                problems.add(signature(method) + " reached the store as "
                        + reached.stream().map(Method::getName).toList());
            }
        }
        return problems;
    }

    private static String signature(Method method) {
        return method.getName()
                + Arrays.stream(method.getParameterTypes())
                        .map(Class::getSimpleName)
                        .toList()
                        .toString()
                        .replace('[', '(')
                        .replace(']', ')');
    }

    private static Object[] arguments(Method method) {
        Class<?>[] types = method.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            args[i] = sample(types[i]);
        }
        return args;
    }

    private static Object sample(Class<?> type) {
        if (type == LockKey.class) {
            return KEY;
        }
        if (type == String.class) {
            return OWNER;
        }
        if (type == Duration.class) {
            return LEASE;
        }
        if (type == List.class) {
            return List.of(KEY, LockKey.of("forwarding", "other"));
        }
        if (type == AcquireRequest.class) {
            return AcquireRequest.waiting(KEY, OWNER, LEASE, Duration.ofMillis(60));
        }
        if (type == int.class) {
            return 3;
        }
        if (type == Consumer.class) {
            return (Consumer<Object>) notice -> {};
        }
        throw new IllegalStateException("no sample argument of " + type + ": extend ForwardingCheck");
    }

    private static Object answer(Class<?> type) {
        if (type == boolean.class) {
            return true;
        }
        if (type == void.class) {
            return null;
        }
        if (type == int.class) {
            return 1;
        }
        if (type == Optional.class) {
            return Optional.empty();
        }
        if (type == String.class) {
            return "recorder";
        }
        if (type == List.class) {
            return List.of();
        }
        return null;
    }
}
