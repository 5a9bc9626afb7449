package dev.leasehold.spring.internal;

import dev.leasehold.spring.lock.InvalidLockKeyException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/** Evaluates SpEL over a method's arguments, with parsed expressions cached. Thread-safe. */
public final class KeyExpressions {

    private final SpelExpressionParser parser = new SpelExpressionParser();
    private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
    private final ConcurrentHashMap<String, Expression> cache = new ConcurrentHashMap<>();

    public EvaluationContext context(Method method, Object[] arguments) {
        return new MethodBasedEvaluationContext(null, method, arguments, names);
    }

    public Object value(String expression, EvaluationContext context) {
        try {
            return cache.computeIfAbsent(expression, parser::parseExpression).getValue(context);
        } catch (EvaluationException e) {
            throw new InvalidLockKeyException(
                    "cannot evaluate key expression '" + expression + "': " + e.getMessage(), e);
        }
    }

    /**
     * What makes {@code expression} fail on every call of {@code method}, or {@code null}: it does
     * not parse, it names a parameter ({@code #name}) while the method's class file has no parameter
     * names (compiled without {@code -parameters}), or it names no parameter of the method. Such a
     * name would be {@code null} on every call. {@code #root}, {@code #this}, {@code #p0} and
     * {@code #a0} (by position) need no names.
     */
    public String problem(Method method, String expression) {
        Expression parsed;
        try {
            parsed = cache.computeIfAbsent(expression, parser::parseExpression);
        } catch (ParseException e) {
            return "does not parse: " + e.getSimpleMessage();
        }
        Set<String> named = new LinkedHashSet<>();
        if (parsed instanceof SpelExpression spel) {
            variables(spel.getAST(), named);
        }
        named.removeIf(name -> name.equals("root")
                || name.equals("this")
                || POSITIONAL.matcher(name).matches());
        if (named.isEmpty()) {
            return null;
        }
        String first = "#" + named.iterator().next();
        String[] parameters = names.getParameterNames(method);
        if (parameters == null) {
            return "names " + first + ", but the class was compiled without parameter names, so " + first
                    + " would be null on every call: compile with -parameters (Maven:"
                    + " <maven.compiler.parameters>true</maven.compiler.parameters>; Gradle:"
                    + " options.compilerArgs.add('-parameters')), or name the argument by its position"
                    + " (#p0 or #a0 for the first, #p1 for the second)";
        }
        List<String> known = Arrays.asList(parameters);
        for (String name : named) {
            if (!known.contains(name)) {
                return "names #" + name + ", which is not a parameter of the method (its parameters: "
                        + (known.isEmpty() ? "none" : String.join(", ", known))
                        + "), so it would be null on every call";
            }
        }
        return null;
    }

    private static final Pattern POSITIONAL = Pattern.compile("[pa][0-9]+");

    private static void variables(SpelNode node, Set<String> into) {
        if (node instanceof VariableReference) {
            into.add(node.toStringAST().substring(1));
        }
        for (int i = 0; i < node.getChildCount(); i++) {
            variables(node.getChild(i), into);
        }
    }

    /** The elements of a collection or array value, otherwise the one value. */
    public static List<Object> elements(Object value) {
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

    public static String text(Object value) {
        return value == null ? null : String.valueOf(value);
    }
}
