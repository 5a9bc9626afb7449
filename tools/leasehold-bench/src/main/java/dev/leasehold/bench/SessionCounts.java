package dev.leasehold.bench;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** Statement counts kept by the database server for one session. */
final class SessionCounts {

    private SessionCounts() {}

    /**
     * The statements this session sent before this call, by the server's count: MariaDB's session
     * {@code Questions}, less the one that asks. -1 where the server keeps no such count (PostgreSQL:
     * its transaction counts are per database, see {@link ServerCounts}).
     */
    static long statementsSoFar(Connection connection, Database database) throws SQLException {
        if (database != Database.MARIADB) {
            return -1;
        }
        try (Statement s = connection.createStatement();
                ResultSet row = s.executeQuery("SHOW SESSION STATUS LIKE 'Questions'")) {
            return row.next() ? row.getLong(2) - 1 : -1;
        }
    }

    /**
     * The sum of {@link #statementsSoFar} over every connection of a pool of {@code size}: borrows
     * them all at once, so each is asked exactly once.
     */
    static long poolStatements(DataSource pool, int size, Database database) throws SQLException {
        if (database != Database.MARIADB) {
            return -1;
        }
        List<Connection> borrowed = new ArrayList<>();
        try {
            long total = 0;
            for (int i = 0; i < size; i++) {
                Connection connection = pool.getConnection();
                borrowed.add(connection);
                total += statementsSoFar(connection, database);
            }
            return total;
        } finally {
            for (Connection connection : borrowed) {
                connection.close();
            }
        }
    }
}
