package dev.leasehold.spring.it;

import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseListener;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.security.Principal;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/** A small application using the starter the way a service would. */
@SpringBootApplication
public class TestApp {

    /** What the database showed, from a fresh connection, at the moment each lease was released. */
    public static final List<String> SEEN_AT_RELEASE = new CopyOnWriteArrayList<>();

    @Bean
    LeaseListener visibilityAtRelease(DataSource dataSource) {
        JdbcTemplate plain = new JdbcTemplate(dataSource);
        return event -> {
            if (event.type() == LeaseEventType.RELEASED
                    && event.key().namespace().equals("acct")) {
                String id = event.key().ids().get(event.key().ids().size() - 1);
                List<Long> balance = plain.queryForList("SELECT balance FROM it_account WHERE id = ?", Long.class, id);
                SEEN_AT_RELEASE.add(id + "=" + (balance.isEmpty() ? "none" : balance.get(0)));
            }
        };
    }

    /** Stands in for Spring Security: the header X-Test-Role grants that role. */
    @Bean
    Filter testRoles() {
        return (request, response, chain) -> {
            HttpServletRequest http = (HttpServletRequest) request;
            String role = http.getHeader("X-Test-Role");
            if (role == null) {
                chain.doFilter(request, response);
                return;
            }
            chain.doFilter(
                    new HttpServletRequestWrapper(http) {
                        @Override
                        public boolean isUserInRole(String wanted) {
                            return role.equals(wanted);
                        }

                        @Override
                        public Principal getUserPrincipal() {
                            return () -> "operator";
                        }
                    },
                    response);
        };
    }
}
