package dev.leasehold.spring.lock;

import dev.leasehold.spring.internal.AnnotatedMethods;
import dev.leasehold.spring.internal.KeyExpressions;
import dev.leasehold.spring.web.Idempotent;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;

/**
 * Checks the SpEL expressions of the application's {@link Locked} and {@link Idempotent} methods
 * once every singleton exists, and fails startup, naming the method, the attribute and the fix, for
 * an expression that would fail or be {@code null} on every call: one that does not parse, one that
 * names a parameter ({@code #name}) of a method compiled without parameter names, or one that names
 * no parameter of its method. Otherwise a {@code #tenant} compiled away answers every call "the
 * tenant is missing", and a scope {@code 'pay:' + #account} puts every account in one scope.
 */
final class ExpressionsCheck implements SmartInitializingSingleton {

    private final ListableBeanFactory beans;
    private final KeyExpressions expressions = new KeyExpressions();

    ExpressionsCheck(ListableBeanFactory beans) {
        this.beans = beans;
    }

    @Override
    public void afterSingletonsInstantiated() {
        List<String> problems = new ArrayList<>();
        for (AnnotatedMethods.Annotated<Locked> found : AnnotatedMethods.annotated(beans, Locked.class)) {
            Locked locked = found.annotation();
            String[] keys = locked.key();
            for (int i = 0; i < keys.length; i++) {
                check(problems, found, "@Locked", keys.length == 1 ? "key" : "key[" + i + "]", keys[i]);
            }
            check(problems, found, "@Locked", "tenant", locked.tenant());
            check(problems, found, "@Locked", "retryKey", locked.retryKey());
        }
        for (AnnotatedMethods.Annotated<Idempotent> found : AnnotatedMethods.annotated(beans, Idempotent.class)) {
            Idempotent idempotent = found.annotation();
            check(problems, found, "@Idempotent", "key", idempotent.key());
            check(problems, found, "@Idempotent", "scope", idempotent.scope());
            check(problems, found, "@Idempotent", "tenant", idempotent.tenant());
            check(problems, found, "@Idempotent", "payload", idempotent.payload());
            check(problems, found, "@Idempotent", "session", idempotent.session());
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException(
                    "Leasehold cannot evaluate these expressions:\n  - " + String.join("\n  - ", problems));
        }
    }

    private void check(
            List<String> problems,
            AnnotatedMethods.Annotated<?> found,
            String annotation,
            String attribute,
            String expression) {
        if (expression.isEmpty()) {
            return;
        }
        String problem = expressions.problem(found.method(), expression);
        if (problem != null) {
            problems.add(
                    found.signature() + ": " + annotation + "(" + attribute + " = \"" + expression + "\") " + problem);
        }
    }
}
