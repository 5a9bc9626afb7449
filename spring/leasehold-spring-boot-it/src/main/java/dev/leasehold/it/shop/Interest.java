package dev.leasehold.it.shop;

import dev.leasehold.spring.lock.Locked;
import java.time.LocalDate;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** A background job: when the account is busy its call is stored and run again later. */
@Service
public class Interest {

    private final JdbcTemplate jdbc;

    public Interest(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** Accrues a day's interest once; a busy account is retried later with the same {@code LocalDate}. */
    @Locked(namespace = "interest", key = "#account", onBusy = Locked.OnBusy.RETRY_LATER)
    @Transactional
    public void accrue(String account, LocalDate day) {
        jdbc.update("INSERT INTO shop_interest (account, value_day) VALUES (?, ?)", account, day);
    }

    /** The days accrued for the account. */
    public java.util.List<LocalDate> days(String account) {
        return jdbc.queryForList(
                "SELECT value_day FROM shop_interest WHERE account = ? ORDER BY value_day", LocalDate.class, account);
    }
}
