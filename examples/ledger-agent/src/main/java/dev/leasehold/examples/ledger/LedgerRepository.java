package dev.leasehold.examples.ledger;

import dev.leasehold.jdbc.Database;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Plain SQL over users, ledgers, members, categories, transactions, sessions, messages and the
 * persisted rounds of chat requests.
 */
@Repository
class LedgerRepository {

    record User(String id, String name, String timeZone) {}

    record Session(String id, String userId, String ledgerId, String title, boolean deleted) {}

    record Message(String id, String role, String content, String createdAt) {}

    record Category(String id, String name, String type) {}

    record Transaction(String id, String type, BigDecimal amount, String category, String note, String occurredOn) {}

    record Ledger(String id, String name, String ownerId, boolean owned) {}

    record Member(String userId, String name, boolean owner) {}

    /*
     * Ownership of a chat request, in ONE statement against its request record (S1.10: asserted
     * before and after each model call): refreshes the heartbeat only while the record is still
     * PROCESSING under this execution's token. 0 rows: another execution took it over, or it ended.
     */
    private static final String OWN_REQUEST = """
            UPDATE leasehold_request SET updated_at_ms = {now}
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ?
            """;

    /* A round's plan; the primary key (request, round) lets exactly one plan per round exist. */
    private static final String INSERT_ROUND =
            "INSERT INTO chat_round (request_id, round_no, reply_json, created_at) VALUES (?, ?, ?, ?)";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final String ownRequest;

    LedgerRepository(JdbcTemplate jdbc, TransactionTemplate transactions) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.ownRequest = OWN_REQUEST.replace(
                "{now}", Database.detect(jdbc.getDataSource()).nowMillisSql());
    }

    static String newId() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    Optional<User> userByToken(String token) {
        return jdbc
                .query(
                        "SELECT id, name, time_zone FROM app_user WHERE token = ?",
                        (rs, i) -> new User(rs.getString(1), rs.getString(2), rs.getString(3)),
                        token)
                .stream()
                .findFirst();
    }

    void insertUser(String id, String name, String token, String timeZone) {
        jdbc.update("INSERT INTO app_user (id, name, token, time_zone) VALUES (?, ?, ?, ?)", id, name, token, timeZone);
    }

    boolean userExists(String id) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM app_user WHERE id = ?", Integer.class, id) > 0;
    }

    void insertLedger(String id, String name, String ownerId) {
        jdbc.update("INSERT INTO ledger (id, name, owner_id) VALUES (?, ?, ?)", id, name, ownerId);
        jdbc.update("INSERT INTO ledger_member (ledger_id, user_id) VALUES (?, ?)", id, ownerId);
        for (String[] c : new String[][] {
            {"餐饮", "expense"},
            {"交通", "expense"},
            {"购物", "expense"},
            {"其他", "expense"},
            {"工资", "income"},
            {"其他收入", "income"}
        }) {
            jdbc.update(
                    "INSERT INTO category (id, ledger_id, name, type) VALUES (?, ?, ?, ?)", newId(), id, c[0], c[1]);
        }
    }

    List<Ledger> ledgers(String userId) {
        return jdbc.query(
                "SELECT l.id, l.name, l.owner_id FROM ledger l JOIN ledger_member m ON m.ledger_id = l.id"
                        + " WHERE m.user_id = ? ORDER BY l.name, l.id",
                (rs, i) -> new Ledger(
                        rs.getString(1),
                        rs.getString(2),
                        rs.getString(3),
                        rs.getString(3).equals(userId)),
                userId);
    }

    /** The owner of a ledger, if it exists. */
    Optional<String> ledgerOwner(String ledgerId) {
        return jdbc.queryForList("SELECT owner_id FROM ledger WHERE id = ?", String.class, ledgerId).stream()
                .findFirst();
    }

    /** Adds a member unless already one (the primary key decides a race, S1.13); returns whether it added. */
    boolean addMember(String ledgerId, String userId) {
        try {
            jdbc.update("INSERT INTO ledger_member (ledger_id, user_id) VALUES (?, ?)", ledgerId, userId);
            return true;
        } catch (DuplicateKeyException alreadyMember) {
            return false;
        }
    }

    List<Member> members(String ledgerId) {
        return jdbc.query(
                "SELECT u.id, u.name, CASE WHEN l.owner_id = u.id THEN 1 ELSE 0 END FROM ledger_member m"
                        + " JOIN app_user u ON u.id = m.user_id JOIN ledger l ON l.id = m.ledger_id"
                        + " WHERE m.ledger_id = ? ORDER BY u.id",
                (rs, i) -> new Member(rs.getString(1), rs.getString(2), rs.getInt(3) == 1),
                ledgerId);
    }

    boolean isMember(String ledgerId, String userId) {
        return jdbc.queryForObject(
                        "SELECT COUNT(*) FROM ledger_member WHERE ledger_id = ? AND user_id = ?",
                        Integer.class,
                        ledgerId,
                        userId)
                > 0;
    }

    List<Category> categories(String ledgerId) {
        return jdbc.query(
                "SELECT id, name, type FROM category WHERE ledger_id = ? ORDER BY type, name",
                (rs, i) -> new Category(rs.getString(1), rs.getString(2), rs.getString(3)),
                ledgerId);
    }

    List<Transaction> transactions(String ledgerId) {
        return jdbc.query(
                "SELECT t.id, t.type, t.amount, c.name, t.note, t.occurred_on FROM ledger_tx t"
                        + " JOIN category c ON c.id = t.category_id WHERE t.ledger_id = ? ORDER BY t.created_at, t.id",
                (rs, i) -> new Transaction(
                        rs.getString(1),
                        rs.getString(2),
                        rs.getBigDecimal(3),
                        rs.getString(4),
                        rs.getString(5),
                        rs.getDate(6).toLocalDate().toString()),
                ledgerId);
    }

    /** Books a transaction on the given connection: the side effect's own transaction (S1.9). */
    static String book(
            Connection c,
            String ledgerId,
            String userId,
            String categoryId,
            String type,
            BigDecimal amount,
            String note,
            LocalDate date,
            String requestId)
            throws SQLException {
        String id = newId();
        try (PreparedStatement s =
                c.prepareStatement("INSERT INTO ledger_tx (id, ledger_id, user_id, category_id, type, amount,"
                        + " note, occurred_on, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            s.setString(1, id);
            s.setString(2, ledgerId);
            s.setString(3, userId);
            s.setString(4, categoryId);
            s.setString(5, type);
            s.setBigDecimal(6, amount);
            s.setString(7, note);
            s.setObject(8, java.sql.Date.valueOf(date));
            s.setString(9, requestId);
            s.setTimestamp(10, Timestamp.from(Instant.now()));
            s.executeUpdate();
        }
        return id;
    }

    Session insertSession(String userId, String ledgerId, String title) {
        String id = newId();
        jdbc.update(
                "INSERT INTO chat_session (id, user_id, ledger_id, title, deleted, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                id,
                userId,
                ledgerId,
                title,
                false,
                Timestamp.from(Instant.now()));
        return new Session(id, userId, ledgerId, title, false);
    }

    Optional<Session> session(String id) {
        return jdbc
                .query(
                        "SELECT id, user_id, ledger_id, title, deleted FROM chat_session WHERE id = ?",
                        (rs, i) -> new Session(
                                rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getBoolean(5)),
                        id)
                .stream()
                .findFirst();
    }

    List<Session> sessions(String userId) {
        return jdbc.query(
                "SELECT id, user_id, ledger_id, title, deleted FROM chat_session WHERE user_id = ? AND deleted = ?"
                        + " ORDER BY created_at",
                (rs, i) -> new Session(
                        rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getBoolean(5)),
                userId,
                false);
    }

    void deleteSession(String id) {
        jdbc.update("UPDATE chat_session SET deleted = ? WHERE id = ?", true, id);
    }

    /** Inserts a message unless one with the same dedupe key exists (S1.13); returns whether it inserted. */
    boolean insertMessage(String sessionId, String role, String content, String dedupeKey) {
        try {
            jdbc.update(
                    "INSERT INTO chat_message (id, session_id, role, content, dedupe_key, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    newId(),
                    sessionId,
                    role,
                    content,
                    dedupeKey,
                    Timestamp.from(Instant.now()));
            return true;
        } catch (DuplicateKeyException alreadyThere) {
            return false;
        }
    }

    Optional<String> messageByKey(String dedupeKey) {
        return jdbc
                .queryForList("SELECT content FROM chat_message WHERE dedupe_key = ?", String.class, dedupeKey)
                .stream()
                .findFirst();
    }

    List<Message> messages(String sessionId) {
        return jdbc.query(
                "SELECT id, role, content, created_at FROM chat_message WHERE session_id = ? ORDER BY created_at, id",
                (rs, i) -> new Message(
                        rs.getString(1),
                        rs.getString(2),
                        rs.getString(3),
                        rs.getTimestamp(4).toInstant().toString()),
                sessionId);
    }

    /**
     * Whether this execution still owns the chat request: one statement (see {@link #OWN_REQUEST}).
     */
    boolean ownsRequest(String requestId, String token) {
        return jdbc.update(ownRequest, requestId, token) == 1;
    }

    /** The persisted plans of a request's rounds, by round number (1 first). */
    List<String> rounds(String requestId) {
        return jdbc.queryForList(
                "SELECT reply_json FROM chat_round WHERE request_id = ? ORDER BY round_no", String.class, requestId);
    }

    /** The outcome of persisting a round's plan. */
    enum RoundSaved {
        /** This execution's plan is now the round's plan. */
        SAVED,
        /** Another execution persisted the round first: its plan is the round's plan. */
        ALREADY_PERSISTED,
        /** This execution no longer owns the request: nothing was written. */
        NOT_OWNER
    }

    /**
     * Persists a round's plan if this execution still owns the request, in one transaction: the
     * ownership statement (which also locks the request row until commit, so no take-over can
     * interleave) and the insert.
     */
    RoundSaved saveRound(String requestId, String token, int round, String replyJson) {
        try {
            return transactions.execute(status -> {
                if (jdbc.update(ownRequest, requestId, token) != 1) {
                    return RoundSaved.NOT_OWNER;
                }
                jdbc.update(INSERT_ROUND, requestId, round, replyJson, Timestamp.from(Instant.now()));
                return RoundSaved.SAVED;
            });
        } catch (DuplicateKeyException persistedFirst) {
            return RoundSaved.ALREADY_PERSISTED;
        }
    }
}
