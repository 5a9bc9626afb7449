package dev.leasehold.spring;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.leasehold.LockBusyException;
import dev.leasehold.jdbc.Database;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.util.ReflectionUtils;

/**
 * The durable delayed-retry queue of {@code @Locked(onBusy = RETRY_LATER)} (S2.10): a background
 * call that finds its key busy is written to {@code leasehold_retry} (bean, method, arguments as
 * JSON, due time by the database clock) and run again later through the bean's proxy, so it takes
 * its lock again. Busy again: rescheduled with a doubled delay; after too many attempts, or on any
 * other failure, the row is parked as FAILED with the error for an operator. Nothing is dropped.
 *
 * <p>Each due row is claimed with a compare-and-set (PENDING to RUNNING), so several instances may
 * poll one table. A row left RUNNING by a crashed instance is made PENDING again after five minutes:
 * delivery is at least once, and the method's own safety net (unique keys, CAS updates) must make a
 * second run harmless. Thread-safe.
 */
final class DelayedRetries implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(DelayedRetries.class);

    private final DataSource dataSource;
    private final Database database;
    private final ApplicationContext context;
    private final ObjectMapper mapper;
    private final LeaseholdProperties.Retry settings;
    private final Consumer<String> events;
    private final ThreadLocal<Boolean> replaying = ThreadLocal.withInitial(() -> false);
    private ScheduledExecutorService poller;

    DelayedRetries(
            DataSource dataSource,
            Database database,
            ApplicationContext context,
            ObjectMapper mapper,
            LeaseholdProperties.Retry settings,
            Consumer<String> events) {
        this.dataSource = dataSource;
        this.database = database;
        this.context = context;
        this.mapper = mapper;
        this.settings = settings;
        this.events = events;
    }

    boolean replaying() {
        return replaying.get();
    }

    private String now() {
        return database.nowMillisSql();
    }

    /** Records a busy call for a later run. */
    void schedule(MethodInvocation invocation, Method method, Class<?> targetClass, LockBusyException busy) {
        String bean = beanName(targetClass);
        List<String> types = new ArrayList<>();
        for (Class<?> type : method.getParameterTypes()) {
            types.add(type.getName());
        }
        try (Connection c = dataSource.getConnection();
                PreparedStatement s = c.prepareStatement("INSERT INTO leasehold_retry (id, bean_name, method_name,"
                        + " parameter_types, arguments_json, lock_key, attempts, status, due_at_ms, created_at_ms)"
                        + " VALUES (?, ?, ?, ?, ?, ?, 0, 'PENDING', " + now() + " + ?, " + now() + ")")) {
            s.setString(1, UUID.randomUUID().toString().replace("-", ""));
            s.setString(2, bean);
            s.setString(3, method.getName());
            s.setString(4, String.join(",", types));
            s.setString(5, mapper.writeValueAsString(invocation.getArguments()));
            s.setString(6, busy.key().render());
            s.setLong(7, settings.getInitialDelay().toMillis());
            s.executeUpdate();
            if (!c.getAutoCommit()) {
                c.commit();
            }
        } catch (SQLException | com.fasterxml.jackson.core.JsonProcessingException e) {
            // Dropping the call would lose work: fail loudly instead.
            throw new IllegalStateException(
                    "could not record a retry of " + method.getName() + " for " + busy.key(), e);
        }
        events.accept("scheduled");
        log.info(
                "lock {} busy: {}.{} recorded for a retry in {}",
                busy.key(),
                bean,
                method.getName(),
                settings.getInitialDelay());
    }

    private String beanName(Class<?> targetClass) {
        String[] names = context.getBeanNamesForType(targetClass);
        if (names.length != 1) {
            throw new IllegalStateException(
                    "RETRY_LATER needs exactly one bean of " + targetClass.getName() + ", found " + names.length);
        }
        return names[0];
    }

    /** Runs the due retries once; returns how many ran. */
    int runDue() {
        List<String> due = new ArrayList<>();
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement reset = c.prepareStatement("UPDATE leasehold_retry SET status = 'PENDING'"
                    + " WHERE status = 'RUNNING' AND claimed_at_ms < " + now() + " - 300000")) {
                reset.executeUpdate();
            }
            try (PreparedStatement s = c.prepareStatement("SELECT id FROM leasehold_retry WHERE status = 'PENDING'"
                            + " AND due_at_ms <= " + now() + " ORDER BY due_at_ms LIMIT 20");
                    ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    due.add(rs.getString(1));
                }
            }
            if (!c.getAutoCommit()) {
                c.commit();
            }
        } catch (SQLException e) {
            log.warn("could not read due retries: {}", e.getMessage());
            return 0;
        }
        int ran = 0;
        for (String id : due) {
            if (update(
                            "UPDATE leasehold_retry SET status = 'RUNNING', claimed_at_ms = " + now()
                                    + " WHERE id = ? AND status = 'PENDING'",
                            id)
                    == 1) {
                run(id);
                ran++;
            }
        }
        return ran;
    }

    private void run(String id) {
        Row row;
        try {
            row = read(id);
        } catch (SQLException e) {
            log.warn("could not read retry {}: {}", id, e.getMessage());
            return;
        }
        replaying.set(true);
        try {
            Object bean = context.getBean(row.bean);
            Method method = findMethod(bean.getClass(), row.method, row.types);
            JavaType[] types = new JavaType[method.getParameterCount()];
            for (int i = 0; i < types.length; i++) {
                types[i] = mapper.constructType(method.getGenericParameterTypes()[i]);
            }
            var array = mapper.readTree(row.arguments);
            Object[] arguments = new Object[types.length];
            for (int i = 0; i < types.length; i++) {
                arguments[i] = mapper.treeToValue(array.get(i), types[i]);
            }
            ReflectionUtils.makeAccessible(method);
            method.invoke(bean, arguments);
            update("DELETE FROM leasehold_retry WHERE id = ?", id);
            events.accept("completed");
            log.info("retry {} of {}.{} completed", id, row.bean, row.method);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof LockBusyException && row.attempts + 1 < settings.getMaxAttempts()) {
                long delay = Math.min(
                        settings.getMaxDelay().toMillis(),
                        settings.getInitialDelay().toMillis() << Math.min(20, row.attempts + 1));
                update(
                        "UPDATE leasehold_retry SET status = 'PENDING', attempts = attempts + 1, due_at_ms = " + now()
                                + " + " + delay + " WHERE id = ?",
                        id);
                events.accept("rescheduled");
            } else {
                park(id, String.valueOf(cause));
            }
        } catch (Exception e) {
            park(id, String.valueOf(e));
        } finally {
            replaying.remove();
        }
    }

    private void park(String id, String error) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement s = c.prepareStatement(
                        "UPDATE leasehold_retry SET status = 'FAILED', attempts = attempts + 1, last_error = ? WHERE id = ?")) {
            s.setString(1, error.length() > 1000 ? error.substring(0, 1000) : error);
            s.setString(2, id);
            s.executeUpdate();
            if (!c.getAutoCommit()) {
                c.commit();
            }
        } catch (SQLException e) {
            log.warn("could not park retry {}: {}", id, e.getMessage());
        }
        events.accept("failed");
        log.error("retry {} parked as FAILED for an operator: {}", id, error);
    }

    private static Method findMethod(Class<?> type, String name, String types) throws ClassNotFoundException {
        String[] names = types.isEmpty() ? new String[0] : types.split(",");
        Class<?>[] parameters = new Class<?>[names.length];
        for (int i = 0; i < names.length; i++) {
            parameters[i] = org.springframework.util.ClassUtils.forName(names[i], type.getClassLoader());
        }
        Method method = ReflectionUtils.findMethod(type, name, parameters);
        if (method == null) {
            throw new IllegalStateException("method " + name + "(" + types + ") no longer exists on " + type.getName());
        }
        return method;
    }

    private record Row(String bean, String method, String types, String arguments, int attempts) {}

    private Row read(String id) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement s =
                        c.prepareStatement("SELECT bean_name, method_name, parameter_types, arguments_json,"
                                + " attempts FROM leasehold_retry WHERE id = ?")) {
            s.setString(1, id);
            try (ResultSet rs = s.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("retry " + id + " disappeared");
                }
                return new Row(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5));
            }
        }
    }

    private int update(String sql, String id) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, id);
            int updated = s.executeUpdate();
            if (!c.getAutoCommit()) {
                c.commit();
            }
            return updated;
        } catch (SQLException e) {
            log.warn("retry {} not updated: {}", id, e.getMessage());
            return 0;
        }
    }

    @Override
    public void start() {
        poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "leasehold-retry");
            thread.setDaemon(true);
            return thread;
        });
        long period = settings.getPollInterval().toMillis();
        poller.scheduleWithFixedDelay(
                () -> {
                    try {
                        runDue();
                    } catch (RuntimeException e) {
                        log.warn("retry poll failed: {}", e.getMessage());
                    }
                },
                period,
                period,
                TimeUnit.MILLISECONDS);
    }

    @Override
    public void stop() {
        if (poller != null) {
            poller.shutdownNow();
            poller = null;
        }
    }

    @Override
    public boolean isRunning() {
        return poller != null;
    }
}
