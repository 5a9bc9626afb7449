package dev.leasehold.examples.loan;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.jackson.autoconfigure.JsonMapperBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;
import tools.jackson.core.StreamReadFeature;

/** Seed 2's credit core: loan notes (借据) and repayments, on Leasehold. */
@SpringBootApplication
@EnableScheduling
public class LoanServiceApplication {

    public static void main(String[] args) {
        SpringApplication.run(LoanServiceApplication.class, args);
    }

    /**
     * The application's JSON mapper refuses a body that names a field twice ({@code {"amount":5,
     * "amount":4000}} is a 400, never 4 000): which value wins must not be up to the parser.
     */
    @Bean
    JsonMapperBuilderCustomizer strictDuplicateFields() {
        return builder -> builder.enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION);
    }
}
