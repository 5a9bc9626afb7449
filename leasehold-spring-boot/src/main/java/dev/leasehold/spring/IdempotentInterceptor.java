package dev.leasehold.spring;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.leasehold.LockKey;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.IdempotencyConflictException;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.StoredResponse;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.EvaluationContext;

/** Runs {@link Idempotent} methods through the {@link IdempotentExecutor}. Thread-safe. */
final class IdempotentInterceptor implements MethodInterceptor {

    private final Supplier<IdempotentExecutor> executor;
    private final ObjectMapper mapper;
    private final LeaseholdProperties properties;
    private final Consumer<String> outcomes;
    private final KeyExpressions expressions = new KeyExpressions();

    IdempotentInterceptor(
            Supplier<IdempotentExecutor> executor,
            ObjectMapper mapper,
            LeaseholdProperties properties,
            Consumer<String> outcomes) {
        this.executor = executor;
        this.mapper = mapper;
        this.properties = properties;
        this.outcomes = outcomes;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = invocation.getMethod();
        Class<?> targetClass = invocation.getThis() == null
                ? method.getDeclaringClass()
                : AopUtils.getTargetClass(invocation.getThis());
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        Idempotent idempotent = AnnotatedElementUtils.findMergedAnnotation(specific, Idempotent.class);
        if (idempotent == null) {
            return invocation.proceed();
        }
        EvaluationContext context = expressions.context(specific, invocation.getArguments());
        String key = idempotent.key().isEmpty()
                ? WebRequests.header(properties.getIdempotency().getHeader())
                : KeyExpressions.text(expressions.value(idempotent.key(), context));
        if (key == null || key.isBlank()) {
            outcomes.accept("missing_key");
            throw new IdempotencyKeyMissingException(
                    "this request needs an " + properties.getIdempotency().getHeader()
                            + " header (a unique key per logical request, reused on retries)");
        }
        String scope = idempotent.scope().isEmpty()
                ? targetClass.getSimpleName() + "." + specific.getName()
                : KeyExpressions.text(expressions.value(idempotent.scope(), context));
        Object payload = idempotent.payload().isEmpty()
                ? invocation.getArguments()
                : expressions.value(idempotent.payload(), context);
        String fingerprint = CanonicalJson.fingerprint(mapper.writeValueAsString(payload));
        LockKey session = null;
        if (!idempotent.session().isEmpty()) {
            try {
                session = LockKey.of("session", KeyExpressions.text(expressions.value(idempotent.session(), context)));
            } catch (IllegalArgumentException e) {
                throw new InvalidLockKeyException(e.getMessage(), e);
            }
        }

        AtomicReference<Object> result = new AtomicReference<>();
        IdempotentExecutor.Outcome outcome;
        try {
            outcome = executor.get()
                    .execute(
                            new IdempotentExecutor.Submission(
                                    scope,
                                    key,
                                    fingerprint,
                                    session,
                                    properties.getLock().getLeaseTime()),
                            requestContext -> {
                                Object value;
                                try {
                                    value = invocation.proceed();
                                } catch (Exception e) {
                                    throw e;
                                } catch (Throwable t) {
                                    throw new IllegalStateException(t);
                                }
                                result.set(value);
                                return store(value);
                            });
        } catch (IdempotencyConflictException e) {
            outcomes.accept("taken_over");
            throw e;
        } catch (Exception e) {
            outcomes.accept("failed");
            throw e;
        }
        if (outcome instanceof IdempotentExecutor.Completed done) {
            if (!done.replayed()) {
                outcomes.accept("executed");
                return result.get();
            }
            outcomes.accept("replayed");
            WebRequests.markReplayed();
            return replay(done.response(), specific);
        }
        if (outcome instanceof IdempotentExecutor.Conflict conflict) {
            outcomes.accept(conflict.reason().name().toLowerCase(java.util.Locale.ROOT));
            String message = conflict.reason() == IdempotencyConflictException.Reason.SESSION_BUSY
                    ? "the session still has a message in progress; wait for it and retry"
                    : "request " + key + " is in progress; do not resubmit, poll for its result";
            throw new IdempotencyConflictException(conflict.reason(), message);
        }
        outcomes.accept("mismatch");
        throw new IdempotencyKeyReusedException(key);
    }

    private StoredResponse store(Object value) throws Exception {
        if (WebRequests.isResponseEntity(value)) {
            return new StoredResponse(WebRequests.status(value), mapper.writeValueAsString(WebRequests.body(value)));
        }
        return new StoredResponse(200, mapper.writeValueAsString(value));
    }

    private Object replay(StoredResponse response, Method method) throws Exception {
        Type returnType = method.getGenericReturnType();
        if (WebRequests.isResponseEntityType(method.getReturnType())) {
            Type bodyType = returnType instanceof ParameterizedType parameterized
                    ? parameterized.getActualTypeArguments()[0]
                    : Object.class;
            Object body = read(response.body(), mapper.constructType(bodyType));
            return WebRequests.responseEntity(response.status(), body);
        }
        if (method.getReturnType() == void.class) {
            return null;
        }
        return read(response.body(), mapper.constructType(returnType));
    }

    private Object read(String json, JavaType type) throws Exception {
        return json == null ? null : mapper.readValue(json, type);
    }
}
