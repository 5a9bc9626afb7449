package dev.leasehold.idempotency;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * A real data source whose connections run a hook around {@code commit()}: to halt the JVM right
 * after a commit, or to make a commit fail the way a lost connection does. Everything else goes
 * to the real connection.
 */
final class CommitHooks {

    /** What happens on commit, given the real connection. */
    @FunctionalInterface
    interface OnCommit {
        void commit(Connection real) throws SQLException;
    }

    private CommitHooks() {}

    static DataSource wrap(DataSource real, OnCommit onCommit) {
        return (DataSource) Proxy.newProxyInstance(
                CommitHooks.class.getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    Object result = invoke(method, real, args);
                    if (method.getName().equals("getConnection")) {
                        return connection((Connection) result, onCommit);
                    }
                    return result;
                });
    }

    private static Connection connection(Connection real, OnCommit onCommit) {
        return (Connection) Proxy.newProxyInstance(
                CommitHooks.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("commit") && (args == null || args.length == 0)) {
                        onCommit.commit(real);
                        return null;
                    }
                    return invoke(method, real, args);
                });
    }

    private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
