package dev.leasehold.jdbc.support;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * One SQL statement with named parameters ({@code :name}), parsed once into JDBC's positional
 * {@code ?} text and the ordered list of names. A name may appear several times; every appearance
 * gets the same value. Text inside single-quoted literals, double-quoted identifiers and comments
 * is never a parameter, nor is a PostgreSQL cast ({@code ::BIGINT}) or a MariaDB assignment
 * ({@code :=}). A positional {@code ?} outside them is refused, so the two styles never mix.
 * Immutable and thread-safe.
 */
public final class SqlStatement {

    private final String sql;
    private final List<String> parameters;
    private final Set<String> names;

    private SqlStatement(String sql, List<String> parameters) {
        this.sql = sql;
        this.parameters = List.copyOf(parameters);
        this.names = Set.copyOf(new LinkedHashSet<>(parameters));
    }

    /**
     * Parses {@code namedSql}.
     *
     * @throws IllegalArgumentException on a positional {@code ?} or an unterminated literal,
     *     identifier or comment
     */
    public static SqlStatement of(String namedSql) {
        Objects.requireNonNull(namedSql, "sql is missing (null)");
        StringBuilder out = new StringBuilder(namedSql.length());
        List<String> parameters = new ArrayList<>();
        int length = namedSql.length();
        int i = 0;
        while (i < length) {
            char c = namedSql.charAt(i);
            char next = i + 1 < length ? namedSql.charAt(i + 1) : 0;
            int end;
            if (c == '\'' || c == '"') {
                end = quoteEnd(namedSql, i, c);
            } else if (c == '-' && next == '-') {
                int newline = namedSql.indexOf('\n', i);
                end = newline < 0 ? length : newline + 1;
            } else if (c == '/' && next == '*') {
                int close = namedSql.indexOf("*/", i + 2);
                if (close < 0) {
                    throw new IllegalArgumentException("unterminated comment at " + i + " in: " + namedSql);
                }
                end = close + 2;
            } else if (c == ':' && next == ':') {
                end = i + 2;
            } else if (c == ':' && Character.isJavaIdentifierStart(next) && next != '$') {
                end = i + 2;
                while (end < length && isNamePart(namedSql.charAt(end))) {
                    end++;
                }
                parameters.add(namedSql.substring(i + 1, end));
                out.append('?');
                i = end;
                continue;
            } else if (c == '?') {
                throw new IllegalArgumentException(
                        "positional parameter at " + i + "; name it (:name) in: " + namedSql);
            } else {
                end = i + 1;
            }
            out.append(namedSql, i, end);
            i = end;
        }
        return new SqlStatement(out.toString(), parameters);
    }

    private static boolean isNamePart(char c) {
        return c == '_' || Character.isLetterOrDigit(c);
    }

    /** The index just past the quote that closes the one at {@code start}; a doubled quote is part of the text. */
    private static int quoteEnd(String text, int start, char quote) {
        int i = start + 1;
        while (true) {
            int close = text.indexOf(quote, i);
            if (close < 0) {
                throw new IllegalArgumentException("unterminated " + quote + " at " + start + " in: " + text);
            }
            if (close + 1 < text.length() && text.charAt(close + 1) == quote) {
                i = close + 2;
                continue;
            }
            return close + 1;
        }
    }

    /** The text JDBC prepares, with a {@code ?} for each appearance of a parameter. */
    public String sql() {
        return sql;
    }

    /** The parameter names in the order of their {@code ?}, repeated where a name appears again. */
    public List<String> parameters() {
        return parameters;
    }

    /** Prepares the statement on {@code connection} and binds {@code values} ({@link #bind}). */
    public PreparedStatement prepare(Connection connection, Map<String, ?> values) throws SQLException {
        PreparedStatement statement = connection.prepareStatement(sql);
        try {
            bind(statement, values);
        } catch (SQLException | RuntimeException e) {
            statement.close();
            throw e;
        }
        return statement;
    }

    /**
     * For each {@code ?} of the statement, the index of its name in {@code names}: the positions
     * that {@link #bind(PreparedStatement, int[], Object[])} binds by. Take them once, where the
     * statement is declared; binding by them then looks up no name.
     *
     * @throws IllegalArgumentException if a parameter of the statement is not among {@code names}
     */
    public int[] positionsIn(List<String> names) {
        int[] positions = new int[parameters.size()];
        for (int i = 0; i < positions.length; i++) {
            positions[i] = names.indexOf(parameters.get(i));
            if (positions[i] < 0) {
                throw new IllegalArgumentException(
                        "parameter :" + parameters.get(i) + " is not one of " + names + " in: " + sql);
            }
        }
        return positions;
    }

    /**
     * Prepares the statement on {@code connection} and binds {@code values} by {@code positions}
     * ({@link #bind(PreparedStatement, int[], Object[])}).
     */
    public PreparedStatement prepare(Connection connection, int[] positions, Object[] values) throws SQLException {
        PreparedStatement statement = connection.prepareStatement(sql);
        try {
            bind(statement, positions, values);
        } catch (SQLException | RuntimeException e) {
            statement.close();
            throw e;
        }
        return statement;
    }

    /**
     * Binds {@code values[positions[i]]} to the {@code i}-th {@code ?}, by type as {@link
     * #bind(PreparedStatement, Map)} does; {@code positions} come from {@link #positionsIn} with the
     * names in the order of {@code values}.
     */
    public void bind(PreparedStatement statement, int[] positions, Object[] values) throws SQLException {
        if (positions.length != parameters.size()) {
            throw new IllegalArgumentException(
                    positions.length + " positions for " + parameters.size() + " parameters in: " + sql);
        }
        for (int i = 0; i < positions.length; i++) {
            set(statement, i + 1, values[positions[i]]);
        }
    }

    /**
     * Binds a value to every appearance of each name: strings, longs and ints by their own setters,
     * null as a NULL string, anything else as an object.
     *
     * @throws IllegalArgumentException if a parameter of the statement has no value, or a value
     *     names no parameter of it
     */
    public void bind(PreparedStatement statement, Map<String, ?> values) throws SQLException {
        if (values.size() != names.size() || !names.containsAll(values.keySet())) {
            Set<String> missing = new LinkedHashSet<>(names);
            missing.removeAll(values.keySet());
            Set<String> unknown = new LinkedHashSet<>(values.keySet());
            unknown.removeAll(names);
            throw new IllegalArgumentException("parameters " + names + " bound with " + values.keySet()
                    + (missing.isEmpty() ? "" : "; missing " + missing)
                    + (unknown.isEmpty() ? "" : "; unknown " + unknown) + " in: " + sql);
        }
        for (int i = 0; i < parameters.size(); i++) {
            set(statement, i + 1, values.get(parameters.get(i)));
        }
    }

    private static void set(PreparedStatement statement, int index, Object value) throws SQLException {
        if (value instanceof String text) {
            statement.setString(index, text);
        } else if (value instanceof Long number) {
            statement.setLong(index, number);
        } else if (value instanceof Integer number) {
            statement.setInt(index, number);
        } else if (value == null) {
            statement.setNull(index, Types.VARCHAR);
        } else {
            statement.setObject(index, value);
        }
    }

    @Override
    public String toString() {
        return sql;
    }
}
