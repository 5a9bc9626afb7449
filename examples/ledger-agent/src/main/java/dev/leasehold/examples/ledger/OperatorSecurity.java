package dev.leasehold.examples.ledger;

import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.web.SecurityFilterChain;

/**
 * The actuator endpoints need an operator's login (HTTP Basic, the user {@code
 * spring.security.user.name} with role OPERATOR; its password is {@code LEDGER_OPERATOR_PASSWORD},
 * or generated and logged at start-up when that is unset): {@code /actuator/leasehold} lists every
 * user's live session leases, and the degrade switch changes how every request is locked. Health
 * stays open for probes. A refusal is a problem document (401 with the Basic challenge, 403). The chat API and page are not covered by this chain: they authenticate by
 * their own bearer token ({@link Wiring}).
 */
@Configuration
class OperatorSecurity {

    @Bean
    SecurityFilterChain actuatorSecurity(HttpSecurity http) throws Exception {
        return http.securityMatcher(EndpointRequest.toAnyEndpoint())
                .authorizeHttpRequests(requests -> requests.requestMatchers(EndpointRequest.to("health"))
                        .permitAll()
                        .anyRequest()
                        .hasRole("OPERATOR"))
                .httpBasic(basic -> basic.authenticationEntryPoint(LedgerProblems.operatorLoginNeeded()))
                .exceptionHandling(refusals -> refusals.authenticationEntryPoint(LedgerProblems.operatorLoginNeeded())
                        .accessDeniedHandler(LedgerProblems.operatorRoleNeeded()))
                // No cookies or sessions: every call carries its credentials, so there is nothing for CSRF to forge.
                .csrf(csrf -> csrf.disable())
                .sessionManagement(session -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .build();
    }
}
