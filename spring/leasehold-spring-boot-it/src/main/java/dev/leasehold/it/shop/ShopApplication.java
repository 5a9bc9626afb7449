package dev.leasehold.it.shop;

import org.springframework.boot.SpringApplication;
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
 * A stock Spring Boot 4 service as a new user writes it: the Leasehold starter, Boot's web, JDBC,
 * security and actuator starters, and nothing else (Jackson 3 only). Payments are booked with
 * {@code @Idempotent}; two users, {@code alice} and {@code bob}, sign in with HTTP basic, and
 * {@code /wallet} is open to guests too.
 */
@SpringBootApplication
public class ShopApplication {

    /** The password of both users (a test application). */
    public static final String PASSWORD = "pw";

    public static void main(String[] args) {
        SpringApplication.run(ShopApplication.class, args);
    }

    @Bean
    SecurityFilterChain security(HttpSecurity http) throws Exception {
        return http.csrf(csrf -> csrf.disable())
                .sessionManagement(session -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .authorizeHttpRequests(requests -> requests.requestMatchers("/actuator/health", "/wallet/**")
                        .permitAll()
                        .anyRequest()
                        .authenticated())
                .httpBasic(Customizer.withDefaults())
                .build();
    }

    @Bean
    UserDetailsService users() {
        return new InMemoryUserDetailsManager(
                User.withUsername("alice")
                        .password("{noop}" + PASSWORD)
                        .roles("USER")
                        .build(),
                User.withUsername("bob")
                        .password("{noop}" + PASSWORD)
                        .roles("USER")
                        .build());
    }
}
