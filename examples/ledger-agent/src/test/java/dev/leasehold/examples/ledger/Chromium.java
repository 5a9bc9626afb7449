package dev.leasehold.examples.ledger;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Headless Chromium (Debian's chromium and chromium-driver) for the page tests; a test that needs it
 * is skipped, with a message, where it is not installed.
 */
final class Chromium {

    private static final File BINARY = new File("/usr/bin/chromium");
    private static final File DRIVER = new File("/usr/bin/chromedriver");

    private Chromium() {}

    static WebDriver start() throws Exception {
        Assumptions.assumeTrue(
                BINARY.canExecute() && DRIVER.canExecute(),
                "Chromium is not installed (apt-get install chromium chromium-driver): the browser test is skipped");
        Path profile = Files.createTempDirectory("ledger-chromium");
        ChromeOptions options = new ChromeOptions();
        options.setBinary(BINARY);
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
        return new ChromeDriver(service, options);
    }

    /** Opens the page and logs in with the pre-filled token (alice's). */
    static void logIn(WebDriver browser, WebDriverWait wait, int port) {
        browser.get("http://localhost:" + port + "/");
        browser.findElement(By.id("login")).click();
        wait.until(ExpectedConditions.textToBe(By.id("who"), "Logged in"));
        wait.until(d -> !d.findElements(By.cssSelector("#ledger option")).isEmpty());
        wait.until(d -> script(d, "return state.session") != null);
    }

    static Object script(WebDriver browser, String script) {
        return ((JavascriptExecutor) browser).executeScript(script);
    }

    static void type(WebDriver browser, String text) {
        browser.findElement(By.id("message")).clear();
        browser.findElement(By.id("message")).sendKeys(text);
        browser.findElement(By.id("send")).click();
    }

    static void screenshot(WebDriver browser, String name) throws Exception {
        Path shot = Path.of("target", name);
        Files.createDirectories(shot.getParent());
        Files.write(shot, ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));
    }
}
