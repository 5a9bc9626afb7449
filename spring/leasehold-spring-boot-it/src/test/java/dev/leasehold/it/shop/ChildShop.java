package dev.leasehold.it.shop;

import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/** The shop in a child JVM on the same database, with the main class path of this module. */
final class ChildShop implements AutoCloseable {

    final Process process;
    final int port;
    final Path log;

    private ChildShop(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    static ChildShop start(ShopDatabases database, String name, String... arguments) throws IOException {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String mainOnly = Arrays.stream(classPath.split(File.pathSeparator))
                .filter(entry -> !entry.endsWith("test-classes"))
                .collect(Collectors.joining(File.pathSeparator));
        int port = ShopDatabases.freePort();
        Path log = Path.of("target", name + ".log");
        Files.createDirectories(log.getParent());
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-cp",
                mainOnly,
                ShopApplication.class.getName(),
                "--server.port=" + port));
        command.addAll(database.arguments());
        command.addAll(List.of(arguments));
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        ChildShop child = new ChildShop(process, port, log);
        Http http = new Http(port);
        await().atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(300))
                .ignoreExceptions()
                .failFast("the child JVM exited; see " + log, () -> !process.isAlive())
                .until(() -> http.get("/actuator/health").status() == 200);
        return child;
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
