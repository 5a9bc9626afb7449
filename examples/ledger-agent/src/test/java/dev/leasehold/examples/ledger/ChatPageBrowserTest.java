package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import java.time.Duration;
import java.util.regex.Pattern;
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

/**
 * The web page in headless Chromium with the embedded model: log in, chat, see the transactions
 * appear with two decimals, and on a busy session see "previous message still processing" while the
 * page resends the same request as often as {@code Retry-After} says, a bounded number of times.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "spring.datasource.url=jdbc:h2:mem:ledger-browser;DB_CLOSE_DELAY=-1")
class ChatPageBrowserTest {

    @LocalServerPort
    int port;

    @Autowired
    LockService locks;

    @Autowired
    JdbcTemplate jdbc;

    private WebDriver browser;
    private WebDriverWait wait;

    @BeforeEach
    void open() throws Exception {
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

    private Lease holdSession() {
        String session = String.valueOf(Chromium.script(browser, "return state.session"));
        return locks.tryAcquire(
                        LockKey.of("session", session), LeaseOptions.defaults(), LockOwner.create("other message"))
                .orElseThrow();
    }

    @Test
    void chatBooksTransactionsShowsMoneyWithTwoDecimalsAndWaitsOutABusySession() throws Exception {
        Chromium.type(browser, "打车30，午饭20");
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked 2"));
        wait.until(d -> d.findElements(By.cssSelector("#transactions tr")).size() >= 2);
        assertThat(browser.findElement(By.id("transactions")).getText())
                .contains("交通")
                .contains("餐饮")
                .contains("30.00")
                .contains("20.00");

        // Another message is "in progress" on this session: the page says so and retries.
        Lease held = holdSession();
        Chromium.type(browser, "lunch 12");
        wait.until(ExpectedConditions.textToBePresentInElementLocated(
                By.id("status"), "previous message still processing; retrying in 1 s"));
        held.close();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked 1"));
        wait.until(ExpectedConditions.textToBe(By.id("status"), ""));
        wait.until(d -> d.findElements(By.cssSelector("#transactions tr")).size() >= 3);
        Chromium.screenshot(browser, "ledger-chat-page.png");
    }

    @Test
    void aSessionBusyForLongerThanTheRetriesLeavesTheMessagePendingAndItsResendBooksOnce() {
        Lease held = holdSession();
        try {
            Chromium.script(browser, """
                    const real = window.fetch;
                    window.messagePosts = 0;
                    window.fetch = (url, options) => {
                      if (options && options.method === 'POST' && url.endsWith('/messages')) window.messagePosts++;
                      return real(url, options);
                    };
                    """);
            Chromium.type(browser, "taxi 17");
            wait.until(ExpectedConditions.textToBePresentInElementLocated(
                    By.id("status"), "previous message still processing"));
            wait.until(ExpectedConditions.attributeToBe(By.id("status"), "data-state", "gave-up"));
            assertThat(browser.findElement(By.id("send")).getText()).isEqualTo("Send again");
            String id = String.valueOf(Chromium.script(browser, "return state.pending.id"));
            // One first try and 5 retries, then no more; none of them booked anything.
            await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5)).until(() -> posts() == 6);
            assertThat(ChatHttp.booked(jdbc, id)).isZero();
            held.close();
            held = null;
            browser.findElement(By.id("send")).click();
            wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked 1"));
            assertThat(ChatHttp.booked(jdbc, id)).isEqualTo(1);
            assertThat(Chromium.script(browser, "return state.pending")).isNull();
        } finally {
            if (held != null) {
                held.close();
            }
        }
    }

    @Test
    void anAnswerLostToTheNetworkIsResentWithTheSameIdAndBookedOnce() {
        // The message reaches the server and is booked, but the answer never reaches the page.
        Chromium.script(browser, """
                const real = window.fetch;
                let cut = false;
                window.fetch = (url, options) => {
                  if (!cut && options && options.method === 'POST' && url.endsWith('/messages')) {
                    cut = true;
                    return real(url, options).then(() => { throw new TypeError('connection reset'); });
                  }
                  return real(url, options);
                };
                """);
        Chromium.type(browser, "dinner 42.5");
        wait.until(ExpectedConditions.textMatches(By.id("status"), Pattern.compile("(?i)network error")));
        String id = String.valueOf(Chromium.script(browser, "return state.pending.id"));
        assertThat(ChatHttp.booked(jdbc, id)).isEqualTo(1);

        Chromium.type(browser, "dinner 42.5");
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked 1"));
        assertThat(ChatHttp.booked(jdbc, id))
                .as("the resend replayed the answer")
                .isEqualTo(1);
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("transactions"), "42.50"));
    }

    /** The page's POSTs of a message, counted by the wrapper the test put around {@code fetch}. */
    private long posts() {
        return ((Number) Chromium.script(browser, "return window.messagePosts")).longValue();
    }
}
