package dev.leasehold.examples.ledger;

import static dev.leasehold.examples.ledger.StubModel.booking;
import static dev.leasehold.examples.ledger.StubModel.error;
import static dev.leasehold.examples.ledger.StubModel.text;
import static dev.leasehold.examples.ledger.StubModel.toolCalls;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.UUID;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The page in headless Chromium against a model over HTTP that fails after the booking: the server
 * answers 502 with lunch already booked, the page keeps the message's clientRequestId, and the user
 * who types the message again and sends it gets it answered with exactly one booking.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.datasource.url=jdbc:h2:mem:ledger-browser-stub;DB_CLOSE_DELAY=-1",
            "ledger.model.timeout=5s"
        })
class ChatPageModelFailureBrowserTest {

    static final StubModel STUB = new StubModel();

    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) {
        registry.add("ledger.model.base-url", STUB::baseUrl);
    }

    @AfterAll
    static void stop() {
        STUB.close();
    }

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    private WebDriver browser;
    private WebDriverWait wait;

    @BeforeEach
    void open() throws Exception {
        STUB.reset();
        browser = Chromium.start();
        wait = new WebDriverWait(browser, Duration.ofSeconds(30));
        Chromium.logIn(browser, wait, port);
    }

    @AfterEach
    void close() {
        if (browser != null) {
            browser.quit();
        }
    }

    @Test
    void a502AfterTheBookingThenTheSameMessageAgainBooksExactlyOnce() throws Exception {
        String note = "lunch " + UUID.randomUUID().toString().substring(0, 8);
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", booking("20", "餐饮", note, null)))
                .on(2, (r, attempt) -> attempt == 1 ? error(500, "model overloaded") : text("Booked " + note));

        Chromium.type(browser, "lunch 20");
        wait.until(ExpectedConditions.textMatches(By.id("status"), Pattern.compile("(?i)not answered")));
        assertThat(booked(note)).as("lunch was booked before the model failed").isEqualTo(1);

        // The user types the message again, as anyone would after "not answered", and sends it.
        Chromium.type(browser, "lunch 20");
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked " + note));
        assertThat(booked(note)).as("exactly one booking").isEqualTo(1);
        assertThat(STUB.calls())
                .as("one request: round 1, round 2 failed, round 2 again")
                .isEqualTo(3);
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("transactions"), "20.00"));
        assertThat(STUB.asked(1)).as("the persisted round was not asked again").isEqualTo(1);
        assertThat(browser.findElements(By.cssSelector("#chat .user"))).hasSize(1);
        Chromium.screenshot(browser, "ledger-chat-page-resend.png");
    }

    private int booked(String note) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger_tx WHERE note = ?", Integer.class, note);
    }
}
