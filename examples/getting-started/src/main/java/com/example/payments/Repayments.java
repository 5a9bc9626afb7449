package com.example.payments;

import dev.leasehold.spring.lock.Locked;
import java.math.BigDecimal;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class Repayments {
    private final JdbcTemplate jdbc;

    public Repayments(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s",
            busyMessage = "loan note {id} is being processed, retry later")
    @Transactional
    public Receipt repay(String tenant, String borrowNo, BigDecimal amount) {
        jdbc.update("UPDATE note SET outstanding = outstanding - ? WHERE tenant = ? AND borrow_no = ?",
                amount, tenant, borrowNo);
        return new Receipt(borrowNo, amount);
    }

    public record Receipt(String borrowNo, BigDecimal amount) {}
}
