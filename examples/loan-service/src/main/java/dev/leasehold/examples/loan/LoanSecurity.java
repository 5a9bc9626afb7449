package dev.leasehold.examples.loan;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.authentication.ProviderManager;
import org.springframework.security.authentication.dao.DaoAuthenticationProvider;
import org.springframework.security.authorization.AuthorizationDecision;
import org.springframework.security.authorization.AuthorizationManager;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.access.intercept.RequestAuthorizationContext;

/**
 * Who may call what. Callers are authenticated principals (HTTP Basic; stateless, no cookies, so
 * nothing for CSRF to forge). A principal belongs to one tenant (authority {@code TENANT_<id>}) and
 * has roles: TENANT (a channel: reads and repayments of its tenant), OPERATOR (also waivers,
 * extensions, reversals, write-offs, overdue runs and the demo storm of its tenant), ADMIN (actuator
 * writes: the degrade switch, manual unlock). The users live in memory, from {@code loan.security.users}
 * (the README lists the demo ones); a real deployment plugs in its identity provider instead.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(LoanSecurity.Users.class)
class LoanSecurity {

    static final String TENANT_AUTHORITY = "TENANT_";

    /** {@code loan.security.users}: name → password, tenant and roles. */
    @ConfigurationProperties("loan.security")
    static class Users {
        private Map<String, Account> users = Map.of();

        public Map<String, Account> getUsers() {
            return users;
        }

        public void setUsers(Map<String, Account> users) {
            this.users = users;
        }
    }

    /** One demo account. */
    static class Account {
        private String password;
        private String tenant;
        private List<String> roles = List.of();

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public String getTenant() {
            return tenant;
        }

        public void setTenant(String tenant) {
            this.tenant = tenant;
        }

        public List<String> getRoles() {
            return roles;
        }

        public void setRoles(List<String> roles) {
            this.roles = roles;
        }
    }

    @Bean
    InMemoryUserDetailsManager loanUsers(Users users) {
        InMemoryUserDetailsManager manager = new InMemoryUserDetailsManager();
        users.getUsers()
                .forEach((name, account) -> addUser(
                        manager,
                        name,
                        account.getPassword(),
                        account.getTenant(),
                        account.getRoles().toArray(String[]::new)));
        return manager;
    }

    /** Adds a principal of {@code tenant} (null for none) with {@code roles}; the password is kept as given. */
    static void addUser(
            InMemoryUserDetailsManager manager, String name, String password, String tenant, String... roles) {
        List<String> authorities = new ArrayList<>();
        for (String role : roles) {
            authorities.add("ROLE_" + role);
        }
        if (tenant != null && !tenant.isBlank()) {
            authorities.add(TENANT_AUTHORITY + tenant);
        }
        manager.createUser(User.withUsername(name)
                .password("{noop}" + password)
                .authorities(authorities.toArray(String[]::new))
                .build());
    }

    /**
     * HTTP Basic against {@code users}, passwords checked as configured. No password "upgrade": by
     * default Spring Security re-encodes a {@code {noop}} password with bcrypt after the first login
     * (the in-memory manager takes the new hash), and from then on every request pays a bcrypt
     * check: 116 of 130 samples of running threads in a 600-request storm were in bcrypt, which
     * held the service to some 30 requests a second on two cores. The passwords are in the
     * configuration anyway; a hash of them in memory protects nothing.
     */
    private static AuthenticationManager basicAuthentication(InMemoryUserDetailsManager users) {
        DaoAuthenticationProvider provider = new DaoAuthenticationProvider(users);
        provider.setPasswordEncoder(PasswordEncoderFactories.createDelegatingPasswordEncoder());
        return new ProviderManager(provider);
    }

    @Bean
    SecurityFilterChain loanSecurityChain(HttpSecurity http, InMemoryUserDetailsManager users) throws Exception {
        return http.authenticationManager(basicAuthentication(users))
                .authorizeHttpRequests(requests -> requests.requestMatchers(EndpointRequest.to("health", "info"))
                        .permitAll()
                        .requestMatchers(HttpMethod.GET, "/v3/api-docs/**", "/swagger-ui/**", "/swagger-ui.html")
                        .permitAll()
                        .requestMatchers(EndpointRequest.toAnyEndpoint())
                        .access((auth, ctx) -> new AuthorizationDecision(
                                isGet(ctx)
                                        ? hasRole(auth, "ADMIN") || hasRole(auth, "OPERATOR")
                                        : hasRole(auth, "ADMIN")))
                        .requestMatchers(
                                HttpMethod.POST,
                                "/api/tenants/{tenant}/notes/{borrowNo}/extension",
                                "/api/tenants/{tenant}/notes/{borrowNo}/interest-waivers",
                                "/api/tenants/{tenant}/notes/{borrowNo}/write-off",
                                "/api/tenants/{tenant}/notes/{borrowNo}/repayments/{flowId}/reversal",
                                "/api/tenants/{tenant}/overdue-runs")
                        .access(ofTenant("OPERATOR"))
                        .requestMatchers("/api/tenants/{tenant}/**")
                        .access(ofTenant("TENANT", "OPERATOR"))
                        .requestMatchers("/api/demo/**")
                        .hasRole("OPERATOR")
                        .anyRequest()
                        .denyAll())
                .httpBasic(basic -> basic.authenticationEntryPoint((request, response, e) -> problem(
                        response,
                        401,
                        "unauthenticated",
                        "Unauthenticated",
                        "send HTTP Basic credentials of a tenant, operator or admin principal")))
                .exceptionHandling(handling -> handling.authenticationEntryPoint((request, response, e) -> problem(
                                response,
                                401,
                                "unauthenticated",
                                "Unauthenticated",
                                "send HTTP Basic credentials of a tenant, operator or admin principal"))
                        .accessDeniedHandler((request, response, e) -> problem(
                                response,
                                403,
                                "forbidden",
                                "Forbidden",
                                "this principal may not do this (wrong tenant or missing role)")))
                .csrf(csrf -> csrf.disable())
                .sessionManagement(session -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .formLogin(form -> form.disable())
                .logout(logout -> logout.disable())
                .requestCache(cache -> cache.disable())
                .anonymous(Customizer.withDefaults())
                .build();
    }

    private static boolean isGet(RequestAuthorizationContext ctx) {
        return "GET".equals(ctx.getRequest().getMethod());
    }

    private static AuthorizationManager<RequestAuthorizationContext> ofTenant(String... roles) {
        return (auth, ctx) -> {
            String tenant = ctx.getVariables().get("tenant");
            boolean role = false;
            for (String r : roles) {
                role |= hasRole(auth, r);
            }
            return new AuthorizationDecision(role && belongsTo(auth.get(), tenant));
        };
    }

    static boolean hasRole(Supplier<? extends Authentication> auth, String role) {
        Authentication a = auth.get();
        return a != null
                && a.isAuthenticated()
                && a.getAuthorities().stream().anyMatch(g -> g.getAuthority().equals("ROLE_" + role));
    }

    static boolean belongsTo(Authentication auth, String tenant) {
        return auth != null
                && tenant != null
                && auth.getAuthorities().stream().anyMatch(g -> g.getAuthority().equals(TENANT_AUTHORITY + tenant));
    }

    private static void problem(
            jakarta.servlet.http.HttpServletResponse response, int status, String type, String title, String detail)
            throws IOException {
        response.setStatus(status);
        response.setContentType("application/problem+json");
        if (status == 401) {
            response.setHeader("WWW-Authenticate", "Basic realm=\"loan-service\"");
        }
        response.getWriter()
                .write("{\"type\":\"" + LoanProblems.TYPES + type + "\",\"title\":\"" + title + "\",\"status\":"
                        + status + ",\"detail\":\"" + detail + "\"}");
    }
}
