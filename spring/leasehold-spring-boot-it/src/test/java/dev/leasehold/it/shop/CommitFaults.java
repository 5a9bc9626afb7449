package dev.leasehold.it.shop;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * Breaks the next transaction commit as a dropped connection would: the server either committed or
 * rolled back, and the client only sees an error. Wraps the application's DataSource.
 */
final class CommitFaults implements BeanPostProcessor {

    /** What the next commit does. */
    enum Fault {
        /** The commit reaches the database, then the client gets an error. */
        COMMITTED_THEN_FAILED,
        /** The database rolls back and the client gets an error. */
        ROLLED_BACK_AND_FAILED
    }

    private static final AtomicReference<Fault> NEXT = new AtomicReference<>();

    static void arm(Fault fault) {
        NEXT.set(fault);
    }

    static boolean armed() {
        return NEXT.get() != null;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof DataSource dataSource && !(bean instanceof Faulty)) {
            return new Faulty(dataSource);
        }
        return bean;
    }

    private static final class Faulty extends DelegatingDataSource {
        Faulty(DataSource target) {
            super(target);
        }

        @Override
        public Connection getConnection() throws SQLException {
            return wrap(super.getConnection());
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            return wrap(super.getConnection(user, password));
        }

        private static Connection wrap(Connection real) {
            return (Connection) Proxy.newProxyInstance(
                    CommitFaults.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                        if (method.getName().equals("commit") && !real.getAutoCommit()) {
                            Fault fault = NEXT.getAndSet(null);
                            if (fault == Fault.COMMITTED_THEN_FAILED) {
                                real.commit();
                                throw new SQLException("connection reset while reading the commit's answer", "08006");
                            }
                            if (fault == Fault.ROLLED_BACK_AND_FAILED) {
                                real.rollback();
                                throw new SQLException("connection reset before the commit arrived", "08006");
                            }
                        }
                        if (method.getName().equals("unwrap") && args[0] == Connection.class) {
                            return proxy;
                        }
                        try {
                            return method.invoke(real, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }
    }
}
