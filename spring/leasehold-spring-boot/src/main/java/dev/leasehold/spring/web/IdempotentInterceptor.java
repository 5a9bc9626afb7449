package dev.leasehold.spring.web;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LeaseholdException;
import dev.leasehold.LockKey;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.CommitOutcomeUnknownException;
import dev.leasehold.idempotency.IdempotencyConflictException;
import dev.leasehold.idempotency.IdempotencyKeys;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.InvalidIdempotencyKeyException;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.actuator.LeaseholdObservations;
import dev.leasehold.spring.internal.KeyExpressions;
import dev.leasehold.spring.internal.LeaseholdJson;
import dev.leasehold.spring.lock.InvalidLockKeyException;
import io.micrometer.observation.Observation;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.EvaluationContext;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs {@link Idempotent} methods: claims the request record, runs the method in a transaction of
 * the application's transaction manager (joining the caller's), writes the SUCCESS mark in that
 * transaction, and settles the record when the transaction ends. Each call past the key checks is
 * one {@link LeaseholdObservations#IDEMPOTENT} observation with its outcome. Thread-safe.
 */
final class IdempotentInterceptor implements MethodInterceptor {

    /** Where the interceptor finds what it needs, resolved on first use. */
    record Services(
            IdempotentExecutor executor,
            LeaseholdJson json,
            PlatformTransactionManager transactions,
            DataSource dataSource) {}

    private final Supplier<Services> services;
    private final LeaseholdProperties properties;
    private final Consumer<String> outcomes;
    private final LeaseholdObservations observations;
    private final KeyExpressions expressions = new KeyExpressions();
    private volatile IdempotentResponses responses;
    private volatile Pattern tenantPattern;

    IdempotentInterceptor(
            Supplier<Services> services,
            LeaseholdProperties properties,
            Consumer<String> outcomes,
            LeaseholdObservations observations) {
        this.services = services;
        this.properties = properties;
        this.outcomes = outcomes;
        this.observations = observations;
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
        try {
            IdempotencyKeys.check(key);
        } catch (InvalidIdempotencyKeyException e) {
            outcomes.accept("invalid_key");
            throw e;
        }
        Services s = services.get();
        IdempotentResponses answers = responses(s);
        String scope = scope(idempotent, targetClass, specific, context);
        Observation observation = observations.startIdempotent(scope);
        Consumer<String> outcome = o -> {
            outcomes.accept(o);
            LeaseholdObservations.outcome(observation, o);
        };
        Observation.Scope opened = observation.openScope();
        try {
            return observed(invocation, idempotent, specific, context, key, scope, s, answers, outcome);
        } catch (Throwable t) {
            observation.error(t);
            throw t;
        } finally {
            opened.close();
            observation.stop();
        }
    }

    private Object observed(
            MethodInvocation invocation,
            Idempotent idempotent,
            Method specific,
            EvaluationContext context,
            String key,
            String scope,
            Services s,
            IdempotentResponses answers,
            Consumer<String> outcomes)
            throws Throwable {
        Class<?> returnType = specific.getReturnType();
        boolean handler = WebRequests.isHandler(specific) && (returnType == void.class || !returnType.isPrimitive());
        String fingerprint;
        if (!idempotent.payload().isEmpty()) {
            fingerprint = fingerprint(s.json(), expressions.value(idempotent.payload(), context), specific);
        } else {
            IdempotentRequestBodies.Received body = handler ? WebRequests.receivedBody() : null;
            fingerprint = body == null
                    ? fingerprint(s.json(), IdempotentScopes.payload(specific, invocation.getArguments()), specific)
                    : CanonicalJson.fingerprint(IdempotentScopes.payloadJson(
                            specific,
                            invocation.getArguments(),
                            body.parameter(),
                            body.json(),
                            value -> new String(write(s.json(), value, specific), StandardCharsets.UTF_8)));
        }
        LockKey session = null;
        if (!idempotent.session().isEmpty()) {
            try {
                session = LockKey.of("session", KeyExpressions.text(expressions.value(idempotent.session(), context)));
            } catch (IllegalArgumentException e) {
                throw new InvalidLockKeyException(e.getMessage(), e);
            }
        }
        IdempotentExecutor.Start start = s.executor()
                .start(new IdempotentExecutor.Submission(
                        scope, key, fingerprint, session, properties.getLock().getLeaseTime()));
        if (start instanceof IdempotentExecutor.Completed done) {
            outcomes.accept("replayed");
            if (handler) {
                WebRequests.write(done.response(), done.response().headers(), true);
                return null;
            }
            return answers.value(done.response(), specific);
        }
        if (start instanceof IdempotentExecutor.Conflict conflict) {
            outcomes.accept(conflict.reason().name().toLowerCase(java.util.Locale.ROOT));
            String message = conflict.reason() == IdempotencyConflictException.Reason.SESSION_BUSY
                    ? "the session still has a message in progress; wait for it and retry"
                    : "request " + key + " is in progress; do not resubmit, poll for its result";
            throw new IdempotencyConflictException(conflict.reason(), message);
        }
        if (start instanceof IdempotentExecutor.Mismatch) {
            outcomes.accept("mismatch");
            throw new IdempotencyKeyReusedException(key);
        }
        IdempotentExecutor.Execution execution = ((IdempotentExecutor.Started) start).execution();
        return runClaimed(execution, invocation, specific, handler, key, s, answers, outcomes);
    }

    private Object runClaimed(
            IdempotentExecutor.Execution execution,
            MethodInvocation invocation,
            Method method,
            boolean handler,
            String key,
            Services s,
            IdempotentResponses answers,
            Consumer<String> outcomes)
            throws Throwable {
        Settlement settlement = new Settlement(execution);
        TransactionStatus transaction;
        try {
            DefaultTransactionDefinition definition = new DefaultTransactionDefinition();
            definition.setName(
                    "leasehold-idempotent:" + method.getDeclaringClass().getSimpleName() + "." + method.getName());
            transaction = s.transactions().getTransaction(definition);
            if (!TransactionSynchronizationManager.isSynchronizationActive()) {
                s.transactions().rollback(transaction);
                throw new LeaseholdException("@Idempotent needs transaction synchronization, but the"
                        + " transaction manager " + s.transactions().getClass().getName() + " does not activate it");
            }
            TransactionSynchronizationManager.registerSynchronization(settlement);
        } catch (org.springframework.transaction.TransactionException e) {
            // No transaction could begin (the database is unreachable): nothing ran, nothing changed.
            outcomes.accept("failed");
            settlement.settleWithoutTransaction(e);
            throw new LeaseStoreException("begin the transaction of request", key, e);
        } catch (RuntimeException e) {
            outcomes.accept("failed");
            settlement.settleWithoutTransaction(e);
            throw e;
        }
        Object value;
        IdempotentResponses.Captured captured;
        try {
            execution.assertOwned();
            BufferedResponse buffered = handler ? WebRequests.buffer(invocation) : null;
            value = invocation.proceed();
            captured = answers.capture(value, method, handler, buffered);
            if (captured.stored().status() >= 500) {
                settlement.cause = new IllegalStateException(
                        "the method answered " + captured.stored().status() + "; a 5xx answer is not stored");
                s.transactions().rollback(transaction);
                outcomes.accept("failed");
                if (handler) {
                    // Sent as the handler wrote it (a buffered body would otherwise be lost), unstored.
                    WebRequests.write(captured.stored(), captured.sent(), false);
                    return null;
                }
                return value;
            }
            mark(execution, captured, s.dataSource());
        } catch (Throwable t) {
            settlement.cause = t;
            outcomes.accept(t instanceof IdempotencyConflictException ? "taken_over" : "failed");
            rollback(s.transactions(), transaction, t);
            throw t;
        }
        try {
            s.transactions().commit(transaction);
        } catch (UnexpectedRollbackException e) {
            outcomes.accept("failed");
            throw e;
        } catch (RuntimeException e) {
            // The commit failed (a TransactionException, or a DataAccessException from a translating
            // transaction manager): the database may have committed or not.
            outcomes.accept("outcome_unknown");
            CommitOutcomeUnknownException unknown = new CommitOutcomeUnknownException(key, e);
            if (settlement.unknown != null) {
                unknown.addSuppressed(settlement.unknown);
            }
            throw unknown;
        }
        outcomes.accept("executed");
        if (handler) {
            WebRequests.write(captured.stored(), captured.sent(), false);
            return null;
        }
        return value;
    }

    private static void mark(
            IdempotentExecutor.Execution execution, IdempotentResponses.Captured captured, DataSource dataSource) {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            if (!DataSourceUtils.isConnectionTransactional(connection, dataSource)) {
                throw new LeaseholdException("@Idempotent writes its SUCCESS mark in the method's transaction,"
                        + " but the transaction manager does not manage the DataSource of the request records;"
                        + " set leasehold.idempotency.transaction-manager to the one that does");
            }
            execution.completeInTransaction(connection, captured.stored());
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    private static void rollback(PlatformTransactionManager transactions, TransactionStatus transaction, Throwable t) {
        try {
            transactions.rollback(transaction);
        } catch (RuntimeException e) {
            t.addSuppressed(e);
        }
    }

    private String scope(Idempotent idempotent, Class<?> targetClass, Method method, EvaluationContext context) {
        String base = idempotent.scope().isEmpty()
                ? targetClass.getSimpleName() + "." + method.getName()
                : KeyExpressions.text(expressions.value(idempotent.scope(), context));
        if (base == null || base.isBlank()) {
            throw new InvalidLockKeyException("the scope expression '" + idempotent.scope() + "' gave no value", null);
        }
        if (!idempotent.perCaller()) {
            return IdempotentScopes.scope(base, null, null);
        }
        String tenant;
        String header = null;
        if (!idempotent.tenant().isEmpty()) {
            tenant = KeyExpressions.text(expressions.value(idempotent.tenant(), context));
        } else {
            header = properties.getIdempotency().getTenantHeader();
            tenant = header == null || header.isBlank() ? null : WebRequests.header(header);
        }
        if (tenant != null && !tenant.isEmpty()) {
            checkTenant(
                    tenant,
                    header,
                    header != null ? header + " header" : "tenant expression '" + idempotent.tenant() + "'");
        }
        return IdempotentScopes.scope(base, tenant, Callers.principal());
    }

    /** Refuses a tenant that does not match the configured pattern, naming where it came from. */
    private void checkTenant(String tenant, String header, String source) {
        String configured = properties.getIdempotency().getTenantPattern();
        Pattern pattern = tenantPattern;
        if (pattern == null || !pattern.pattern().equals(configured)) {
            pattern = Pattern.compile(configured);
            tenantPattern = pattern;
        }
        if (!pattern.matcher(tenant).matches()) {
            throw new InvalidTenantException(
                    header,
                    "the " + source + " is not a valid tenant (" + describe(tenant)
                            + "); a tenant matches leasehold.idempotency.tenant-pattern " + configured);
        }
    }

    /** What a refused tenant is like, without echoing it: its first unusual character, or its length. */
    private static String describe(String tenant) {
        for (int i = 0; i < tenant.length(); i++) {
            char c = tenant.charAt(i);
            if (c < '!' || c > '~') {
                return "found U+" + String.format("%04X", (int) c) + " at index " + i;
            }
        }
        return tenant.length() + " characters";
    }

    private static String fingerprint(LeaseholdJson json, Object payload, Method method) {
        return CanonicalJson.fingerprint(new String(write(json, payload, method), StandardCharsets.UTF_8));
    }

    private static byte[] write(LeaseholdJson json, Object payload, Method method) {
        try {
            return json.write(payload);
        } catch (LeaseholdJson.JsonFailure e) {
            throw new ResponseNotStorableException(
                    "the payload of " + method.getName() + " cannot be fingerprinted: " + e.getMessage()
                            + "; name what identifies the request with @Idempotent(payload = ...)",
                    e);
        }
    }

    private IdempotentResponses responses(Services s) {
        IdempotentResponses current = responses;
        if (current == null) {
            current = new IdempotentResponses(
                    s.json(), properties.getIdempotency().getReplayHeaders());
            responses = current;
        }
        return current;
    }

    /** Settles the request record when the transaction that carries its mark ends. */
    private static final class Settlement implements TransactionSynchronization {
        private final IdempotentExecutor.Execution execution;
        private volatile Throwable cause;
        private volatile CommitOutcomeUnknownException unknown;

        Settlement(IdempotentExecutor.Execution execution) {
            this.execution = execution;
        }

        void settleWithoutTransaction(Throwable failure) {
            try {
                execution.rolledBack(failure);
            } finally {
                execution.close();
            }
        }

        @Override
        public void afterCompletion(int status) {
            try {
                switch (status) {
                    case STATUS_COMMITTED -> execution.committed();
                    case STATUS_ROLLED_BACK ->
                        execution.rolledBack(
                                cause != null ? cause : new IllegalStateException("the transaction rolled back"));
                    default ->
                        unknown = execution.outcomeUnknown(
                                cause != null ? cause : new IllegalStateException("the commit failed"));
                }
            } finally {
                execution.close();
            }
        }
    }
}
