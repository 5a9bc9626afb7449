package dev.leasehold.spring.web;

import dev.leasehold.spring.internal.AnnotatedMethods;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.http.HttpEntity;
import org.springframework.util.ClassUtils;

/**
 * Checks the application's {@link Idempotent} methods once every singleton exists, and fails startup
 * naming each method whose declared answer cannot be stored exactly: a body MVC writes after the
 * method returns ({@code StreamingResponseBody}, {@code ResponseBodyEmitter}/{@code SseEmitter},
 * {@code DeferredResult}, {@code Callable}, {@code WebAsyncTask}, futures, publishers, streams), a
 * {@code Resource} or a view, alone or inside a {@code ResponseEntity}, {@code HttpEntity} or {@code
 * Optional}. A method that declares a wider type ({@code ResponseEntity<?>}, {@code Object}) and
 * returns such a value is refused when it answers: its transaction rolls back and nothing is stored.
 */
final class IdempotentMethodsCheck implements SmartInitializingSingleton {

    private static final boolean WEB =
            ClassUtils.isPresent("org.springframework.http.HttpEntity", IdempotentMethodsCheck.class.getClassLoader());

    private final ListableBeanFactory beans;

    IdempotentMethodsCheck(ListableBeanFactory beans) {
        this.beans = beans;
    }

    @Override
    public void afterSingletonsInstantiated() {
        List<String> problems = new ArrayList<>();
        for (AnnotatedMethods.Annotated<Idempotent> found : AnnotatedMethods.annotated(beans, Idempotent.class)) {
            String problem = problem(found.method());
            if (problem != null) {
                problems.add(found.type().getSimpleName() + "." + found.method().getName() + " returns " + problem);
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException("@Idempotent stores each answer before it is sent, and these answers"
                    + " cannot be stored exactly (return the bytes, text or document itself, or leave the method"
                    + " without @Idempotent):\n  - " + String.join("\n  - ", problems));
        }
    }

    /** What is wrong with the method's declared answer, or null if nothing is. */
    private static String problem(Method method) {
        Type declared = method.getGenericReturnType();
        Type inner = declared;
        while (inner instanceof ParameterizedType p && isWrapper((Class<?>) p.getRawType())) {
            inner = p.getActualTypeArguments()[0];
        }
        Class<?> type = raw(inner);
        if (type == null) {
            return null;
        }
        String reason = IdempotentResponses.notStorable(type);
        return reason == null ? null : describe(declared) + ": a " + type.getSimpleName() + " " + reason;
    }

    private static boolean isWrapper(Class<?> type) {
        return type == Optional.class || (WEB && HttpEntity.class.isAssignableFrom(type));
    }

    private static Class<?> raw(Type type) {
        if (type instanceof Class<?> c) {
            return c;
        }
        if (type instanceof ParameterizedType p) {
            return (Class<?>) p.getRawType();
        }
        if (type instanceof GenericArrayType) {
            return Object[].class;
        }
        return null; // a wildcard or type variable: checked on the value
    }

    private static String describe(Type type) {
        if (type instanceof ParameterizedType p) {
            List<String> arguments = new ArrayList<>();
            for (Type argument : p.getActualTypeArguments()) {
                arguments.add(describe(argument));
            }
            return ((Class<?>) p.getRawType()).getSimpleName() + "<" + String.join(", ", arguments) + ">";
        }
        return type instanceof Class<?> c ? c.getSimpleName() : type.getTypeName();
    }
}
