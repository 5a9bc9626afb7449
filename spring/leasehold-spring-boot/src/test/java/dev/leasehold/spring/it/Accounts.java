package dev.leasehold.spring.it;

import dev.leasehold.spring.lock.Locked;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Read-modify-write on accounts with no database lock: only the lease keeps updates from being lost. */
@Service
public class Accounts {

    private final JdbcTemplate jdbc;
    private final List<String> retried = new CopyOnWriteArrayList<>();

    public Accounts(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Locked(
            namespace = "acct",
            tenant = "#tenant",
            key = "#id",
            waitFor = "30s",
            busyMessage = "account {id} is being processed, retry later")
    @Transactional
    public long add(String tenant, String id, long amount) {
        long balance = jdbc.queryForObject("SELECT balance FROM it_account WHERE id = ?", Long.class, id);
        try {
            Thread.sleep(2);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        jdbc.update("UPDATE it_account SET balance = ? WHERE id = ?", balance + amount, id);
        return balance + amount;
    }

    @Locked(
            namespace = "acct",
            tenant = "#tenant",
            key = "#id",
            busyMessage = "account {id} is being processed, retry later")
    @Transactional
    public long addNow(String tenant, String id, long amount) {
        return add(tenant, id, amount);
    }

    /** Calls {@link #add} through the proxy from inside a transaction, then writes more. */
    @Transactional
    public void addInsideCallerTransaction(Accounts self, String tenant, String id) {
        self.add(tenant, id, 1);
        jdbc.update("UPDATE it_account SET balance = balance + 1000 WHERE id = ?", id);
    }

    @Locked(namespace = "acct", tenant = "#tenant", key = "#ids", waitFor = "30s")
    @Transactional
    public void addToAll(String tenant, List<String> ids, long amount) {
        for (String id : ids) {
            jdbc.update("UPDATE it_account SET balance = balance + ? WHERE id = ?", amount, id);
        }
    }

    @Locked(namespace = "acct", tenant = "#tenant", key = "#id", onBusy = Locked.OnBusy.RETRY_LATER)
    @Transactional
    public void accrueInterest(String tenant, String id, long amount) {
        jdbc.update("UPDATE it_account SET balance = balance + ? WHERE id = ?", amount, id);
        retried.add(id);
    }

    /** The accounts interest was accrued on (read through the proxy, so a method). */
    public List<String> retried() {
        return retried;
    }

    public void open(String id, long balance) {
        jdbc.update("INSERT INTO it_account (id, balance) VALUES (?, ?)", id, balance);
    }

    public long balance(String id) {
        return jdbc.queryForObject("SELECT balance FROM it_account WHERE id = ?", Long.class, id);
    }
}
