package dev.leasehold.it.admin;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * A stock Boot application with Spring Security and the Leasehold actuator endpoints: {@code
 * operator} has the admin role, {@code mallory} and a user whose name imitates audit fields do not,
 * and the endpoints are reachable without signing in so that anonymous calls reach them too.
 */
@SpringBootApplication
public class OperatorApp {

    /** The password of every user (a test application). */
    static final String PASSWORD = "pw";

    /** A user name that would read as a forged field in an unquoted line. */
    static final String FORGING_USER = "eve\" by=\"admin";

    @Bean
    SecurityFilterChain security(HttpSecurity http) throws Exception {
        return http.csrf(csrf -> csrf.disable())
                .sessionManagement(session -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .authorizeHttpRequests(requests -> requests.anyRequest().permitAll())
                .httpBasic(Customizer.withDefaults())
                .build();
    }

    @Bean
    UserDetailsService users() {
        return new InMemoryUserDetailsManager(
                User.withUsername("operator")
                        .password("{noop}" + PASSWORD)
                        .roles("LEASEHOLD_ADMIN")
                        .build(),
                User.withUsername("mallory")
                        .password("{noop}" + PASSWORD)
                        .roles("USER")
                        .build(),
                User.withUsername(FORGING_USER)
                        .password("{noop}" + PASSWORD)
                        .roles("USER")
                        .build());
    }
}
