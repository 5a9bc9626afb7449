package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The web page in headless Chromium (Debian's chromium and chromium-driver): log in, chat, see the
 * transactions appear, and see "previous message still processing" on a 409 until the message
 * goes through. Skipped, with a message, where Chromium is not installed.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "spring.datasource.url=jdbc:h2:mem:ledger-browser;DB_CLOSE_DELAY=-1")
class ChatPageBrowserTest {

    private static final File CHROMIUM = new File("/usr/bin/chromium");
    private static final File DRIVER = new File("/usr/bin/chromedriver");

    @LocalServerPort
    int port;

    @Autowired
    LockService locks;

    private WebDriver browser;
    private WebDriverWait wait;

    @BeforeEach
    void open() throws Exception {
        Assumptions.assumeTrue(
                CHROMIUM.canExecute() && DRIVER.canExecute(),
                "Chromium is not installed (apt-get install chromium chromium-driver): the browser test is skipped");
        Path profile = Files.createTempDirectory("ledger-chromium");
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM);
        options.addArguments(
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--window-size=1200,900",
                "--user-data-dir=" + profile);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(DRIVER)
                .usingAnyFreePort()
                .build();
        browser = new ChromeDriver(service, options);
        wait = new WebDriverWait(browser, Duration.ofSeconds(30));
    }

    @AfterEach
    void close() {
        if (browser != null) {
            browser.quit();
        }
    }

    @Test
    void chatBooksTransactionsAndWaitsOutABusySession() throws Exception {
        browser.get("http://localhost:" + port + "/");
        browser.findElement(By.id("login")).click();
        wait.until(ExpectedConditions.textToBe(By.id("who"), "Logged in"));
        wait.until(d -> !d.findElements(By.cssSelector("#ledger option")).isEmpty());

        browser.findElement(By.id("message")).sendKeys("打车30，午饭20");
        browser.findElement(By.id("send")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked 2"));
        wait.until(d -> d.findElements(By.cssSelector("#transactions tr")).size() >= 2);
        assertThat(browser.findElement(By.id("transactions")).getText())
                .contains("交通")
                .contains("餐饮");

        // Another message is "in progress" on this session: the page says so and keeps trying.
        String session = String.valueOf(
                ((org.openqa.selenium.JavascriptExecutor) browser).executeScript("return state.session"));
        var held = locks.tryAcquire(
                        LockKey.of("session", session), LeaseOptions.defaults(), LockOwner.create("other message"))
                .orElseThrow();
        browser.findElement(By.id("message")).sendKeys("lunch 12");
        browser.findElement(By.id("send")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(
                By.id("status"), "previous message still processing"));
        held.close();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("chat"), "Booked 1"));
        wait.until(ExpectedConditions.textToBe(By.id("status"), ""));
        wait.until(d -> d.findElements(By.cssSelector("#transactions tr")).size() >= 3);

        Path shot = Path.of("target", "ledger-chat-page.png");
        Files.createDirectories(shot.getParent());
        Files.write(shot, ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));
    }
}
