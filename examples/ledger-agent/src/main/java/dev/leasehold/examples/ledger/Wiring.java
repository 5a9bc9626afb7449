package dev.leasehold.examples.ledger;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/** The model, simple token authentication, and demo users. */
@Configuration
class Wiring implements WebMvcConfigurer {

    private final LedgerRepository repository;

    Wiring(LedgerRepository repository) {
        this.repository = repository;
    }

    /**
     * The model: an OpenAI-compatible endpoint when {@code ledger.model.base-url} is set, otherwise
     * the embedded rule-based one, which needs no network.
     */
    @Bean
    @ConditionalOnMissingBean(Model.class)
    Model model(
            @Value("${ledger.model.base-url:}") String baseUrl,
            @Value("${ledger.model.name:gpt-4o-mini}") String name,
            @Value("${ledger.model.api-key:}") String apiKey,
            @Value("${ledger.model.timeout:30s}") java.time.Duration timeout) {
        return baseUrl.isBlank() ? new RuleBasedModel() : new OpenAiChatModel(baseUrl, name, apiKey, timeout);
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new HandlerInterceptor() {
                    @Override
                    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
                            throws Exception {
                        String header = request.getHeader("Authorization");
                        var user = header != null && header.startsWith("Bearer ")
                                ? repository.userByToken(header.substring(7).trim())
                                : java.util.Optional.<LedgerRepository.User>empty();
                        if (user.isEmpty()) {
                            response.setHeader("WWW-Authenticate", "Bearer");
                            LedgerProblems.write(
                                    response,
                                    org.springframework.http.HttpStatus.UNAUTHORIZED,
                                    "unauthenticated",
                                    "send Authorization: Bearer <token>");
                            return false;
                        }
                        request.setAttribute(Api.USER, user.get());
                        return true;
                    }
                })
                .addPathPatterns("/api/**");
    }

    /** Demo users alice and bob (tokens alice-token, bob-token), each with a ledger. */
    @Bean
    ApplicationRunner demoUsers() {
        return (ApplicationArguments args) -> {
            if (repository.userExists("alice")) {
                return;
            }
            repository.insertUser("alice", "Alice", "alice-token", "Asia/Shanghai");
            repository.insertLedger("alice-ledger", "Alice's ledger", "alice");
            repository.insertUser("bob", "Bob", "bob-token", "Europe/Berlin");
            repository.insertLedger("bob-ledger", "Bob's ledger", "bob");
        };
    }
}
