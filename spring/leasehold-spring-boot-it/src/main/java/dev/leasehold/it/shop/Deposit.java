package dev.leasehold.it.shop;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.math.BigDecimal;

/**
 * A deposit as a DTO that reads more than it writes: {@code amount} is {@code WRITE_ONLY} and
 * {@code memo} has a setter and no getter, so the application's mapper writes neither back out.
 */
public class Deposit {

    private String account;

    @JsonProperty(access = JsonProperty.Access.WRITE_ONLY)
    private BigDecimal amount;

    private String memo;

    public String getAccount() {
        return account;
    }

    public void setAccount(String account) {
        this.account = account;
    }

    public void setMemo(String memo) {
        this.memo = memo;
    }

    BigDecimal amount() {
        return amount;
    }

    String memo() {
        return memo;
    }
}
