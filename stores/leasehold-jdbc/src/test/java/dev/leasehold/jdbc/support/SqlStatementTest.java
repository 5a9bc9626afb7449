package dev.leasehold.jdbc.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SqlStatementTest {

    @Test
    void namesBecomePositionalParametersInTheirOrder() {
        SqlStatement statement = SqlStatement.of("SELECT * FROM t WHERE a = :key AND b = :owner_token");
        assertThat(statement.sql()).isEqualTo("SELECT * FROM t WHERE a = ? AND b = ?");
        assertThat(statement.parameters()).containsExactly("key", "owner_token");
    }

    @Test
    void aRepeatedNameGetsTheSameValueAtEveryPlace() throws Exception {
        SqlStatement statement = SqlStatement.of("SELECT :key, :owner, :key");
        assertThat(statement.parameters()).containsExactly("key", "owner", "key");
        List<String> bound = new ArrayList<>();
        statement.bind(recording(bound), Map.of("key", "k", "owner", "o"));
        assertThat(bound).containsExactly("1=k", "2=o", "3=k");
    }

    @Test
    void valuesAreBoundByTheirType() throws Exception {
        List<String> bound = new ArrayList<>();
        Map<String, Object> values = new HashMap<>();
        values.put("text", "x");
        values.put("count", 5L);
        values.put("limit", 7);
        values.put("nothing", null);
        SqlStatement.of(":text :count :limit :nothing").bind(recording(bound), values);
        assertThat(bound).containsExactly("1=x", "2=5L", "3=7i", "4=null");
    }

    @Test
    void valuesGivenInADeclaredOrderAreBoundToEveryPlaceOfTheirName() throws Exception {
        SqlStatement statement = SqlStatement.of("SELECT :owner, :key, :owner");
        int[] positions = statement.positionsIn(List.of("key", "owner", "unused"));
        List<String> bound = new ArrayList<>();
        statement.bind(recording(bound), positions, new Object[] {"k", "o", 9L});
        assertThat(bound).containsExactly("1=o", "2=k", "3=o");
    }

    @Test
    void aNameOutsideTheDeclaredOrderIsRefusedWhenThePositionsAreTaken() {
        SqlStatement statement = SqlStatement.of("UPDATE t SET a = :a WHERE b = :b");
        assertThatThrownBy(() -> statement.positionsIn(List.of("a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(":b");
    }

    @Test
    void aMissingNameFailsNamingIt() {
        SqlStatement statement = SqlStatement.of("UPDATE t SET a = :a WHERE b = :b");
        assertThatThrownBy(() -> statement.bind(recording(new ArrayList<>()), Map.of("a", 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("missing [b]");
    }

    @Test
    void anUnknownNameFailsNamingIt() {
        SqlStatement statement = SqlStatement.of("UPDATE t SET a = :a");
        assertThatThrownBy(() -> statement.bind(recording(new ArrayList<>()), Map.of("a", 1, "typo", 2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown [typo]");
    }

    @Test
    void colonsInLiteralsIdentifiersAndCommentsAreText() {
        String sql = "SELECT 'r:' || :key || 'it''s :not' AS \"a:b\" -- :comment\n/* :block */ FROM t";
        SqlStatement statement = SqlStatement.of(sql);
        assertThat(statement.parameters()).containsExactly("key");
        assertThat(statement.sql())
                .isEqualTo("SELECT 'r:' || ? || 'it''s :not' AS \"a:b\" -- :comment\n/* :block */ FROM t");
    }

    @Test
    void postgresCastsAndMariaDbAssignmentsAreText() {
        SqlStatement statement =
                SqlStatement.of("SELECT (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT, :ms::BIGINT, @v := :x");
        assertThat(statement.parameters()).containsExactly("ms", "x");
        assertThat(statement.sql()).isEqualTo("SELECT (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT, ?::BIGINT, @v := ?");
    }

    @Test
    void aPositionalParameterOrAnUnterminatedLiteralIsRefused() {
        assertThatThrownBy(() -> SqlStatement.of("SELECT ? FROM t"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("positional");
        assertThat(SqlStatement.of("SELECT '?' FROM t").parameters()).isEmpty();
        assertThatThrownBy(() -> SqlStatement.of("SELECT 'open FROM t")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SqlStatement.of("SELECT 1 /* open")).isInstanceOf(IllegalArgumentException.class);
    }

    /** A prepared statement that records each value set on it as {@code index=value}. */
    private static PreparedStatement recording(List<String> bound) {
        return (PreparedStatement) Proxy.newProxyInstance(
                PreparedStatement.class.getClassLoader(), new Class<?>[] {PreparedStatement.class}, (p, m, args) -> {
                    switch (m.getName()) {
                        case "setString" -> bound.add(args[0] + "=" + args[1]);
                        case "setLong" -> bound.add(args[0] + "=" + args[1] + "L");
                        case "setInt" -> bound.add(args[0] + "=" + args[1] + "i");
                        case "setNull" -> bound.add(args[0] + "=null");
                        case "setObject" -> bound.add(args[0] + "=" + args[1] + "o");
                        default -> throw new UnsupportedOperationException(m.getName());
                    }
                    return null;
                });
    }
}
