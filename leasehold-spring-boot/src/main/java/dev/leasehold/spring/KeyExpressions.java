package dev.leasehold.spring;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/** Evaluates SpEL over a method's arguments, with parsed expressions cached. Thread-safe. */
final class KeyExpressions {

    private final SpelExpressionParser parser = new SpelExpressionParser();
    private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
    private final ConcurrentHashMap<String, Expression> cache = new ConcurrentHashMap<>();

    EvaluationContext context(Method method, Object[] arguments) {
        return new MethodBasedEvaluationContext(null, method, arguments, names);
    }

    Object value(String expression, EvaluationContext context) {
        try {
            return cache.computeIfAbsent(expression, parser::parseExpression).getValue(context);
        } catch (EvaluationException e) {
            throw new InvalidLockKeyException(
                    "cannot evaluate key expression '" + expression + "': " + e.getMessage(), e);
        }
    }

    /** The elements of a collection or array value, otherwise the one value. */
    static List<Object> elements(Object value) {
        if (value instanceof Collection<?> collection) {
            return new ArrayList<>(collection);
        }
        if (value instanceof Object[] array) {
            return Arrays.asList(array);
        }
        List<Object> single = new ArrayList<>(1);
        single.add(value);
        return single;
    }

    static String text(Object value) {
        return value == null ? null : String.valueOf(value);
    }
}
