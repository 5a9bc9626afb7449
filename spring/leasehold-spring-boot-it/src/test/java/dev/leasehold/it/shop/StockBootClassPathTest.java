package dev.leasehold.it.shop;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.util.ClassUtils;

/** The shop is a stock Spring Boot 4 application: Jackson 3 only. */
class StockBootClassPathTest {

    @Test
    void theApplicationHasJackson3AndNoJackson2OnItsClassPath() {
        ClassLoader loader = getClass().getClassLoader();
        assertThat(ClassUtils.isPresent("tools.jackson.databind.json.JsonMapper", loader))
                .as("Jackson 3, as Spring Boot 4 brings it")
                .isTrue();
        assertThat(ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", loader))
                .as("Jackson 2 databind must not come with the starter")
                .isFalse();
        assertThat(ClassUtils.isPresent("com.fasterxml.jackson.datatype.jsr310.JavaTimeModule", loader))
                .isFalse();
    }
}
