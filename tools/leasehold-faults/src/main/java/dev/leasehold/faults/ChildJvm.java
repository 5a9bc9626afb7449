package dev.leasehold.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM on this JVM's class path, running one of the suite's main classes: holders and
 * services that the scenarios pause ({@code SIGSTOP}), kill ({@code kill -9}) or start with a
 * shifted clock. It talks in lines: commands on its stdin, replies on its stdout prefixed with
 * {@code @}, the operations of a workload it runs prefixed with {@code %} ({@link ChildOps});
 * everything else it prints goes to its log file under {@code target/faults}.
 */
final class ChildJvm implements AutoCloseable {

    static final String REPLY = "@";
    static final String OPS = "%";

    private final String name;
    private final Process process;
    private final PrintWriter in;
    private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();
    private final BlockingQueue<String> ops = new LinkedBlockingQueue<>();
    private final CountDownLatch outputEnded = new CountDownLatch(1);
    private final Path log;

    private ChildJvm(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(this::read, "child-" + name + "-stdout");
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * Starts {@code main} with {@code args}; {@code env} is added to (and may override) this JVM's
     * environment, {@code jvmOptions} go before the class path.
     */
    static ChildJvm start(String name, Class<?> main, List<String> jvmOptions, Map<String, String> env, String... args)
            throws IOException {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        return launch(name, jvmOptions, List.of("-cp", classPath, main.getName()), env, args);
    }

    /**
     * Starts an application jar as its users do ({@code java -jar}), on the jar's own class path;
     * {@code jvmOptions} go before {@code -jar}. It talks no protocol: its output goes to its log.
     */
    static ChildJvm startJar(String name, Path jar, List<String> jvmOptions, String... args) throws IOException {
        return launch(name, jvmOptions, List.of("-jar", jar.toString()), Map.of(), args);
    }

    private static ChildJvm launch(
            String name, List<String> jvmOptions, List<String> main, Map<String, String> env, String... args)
            throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of("-Xmx192m", "-Xss512k", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"));
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.addAll(jvmOptions);
        command.addAll(main);
        command.addAll(List.of(args));
        Path dir = Path.of(System.getProperty("faults.logs", "target/faults"));
        Files.createDirectories(dir);
        Path log = dir.resolve(name + ".log");
        ProcessBuilder builder =
                new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().putAll(env);
        return new ChildJvm(name, builder.start(), log);
    }

    private void read() {
        try (BufferedReader out =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith(REPLY)) {
                    replies.add(line.substring(REPLY.length()));
                } else if (line.startsWith(OPS)) {
                    ops.add(line.substring(OPS.length()));
                } else {
                    Files.writeString(
                            log,
                            line + "\n",
                            StandardCharsets.UTF_8,
                            java.nio.file.StandardOpenOption.CREATE,
                            java.nio.file.StandardOpenOption.APPEND);
                }
            }
        } catch (IOException e) {
            // the child died: expect() reports it
        } finally {
            outputEnded.countDown();
        }
    }

    /** Moves the operation lines received so far to {@code to}; how many. */
    int drainOps(Collection<String> to) {
        return ops.drainTo(to);
    }

    /**
     * Waits until the child's stdout has ended (it exited or was killed) and every line it wrote
     * has been read; whether it has within {@code timeout}.
     */
    boolean awaitOutputEnd(Duration timeout) throws InterruptedException {
        return outputEnded.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    String name() {
        return name;
    }

    Process process() {
        return process;
    }

    long pid() {
        return process.pid();
    }

    /** Sends one command line. */
    void send(String command) {
        in.println(command);
        if (in.checkError()) {
            throw new UncheckedIOException(new IOException("child " + name + " no longer reads its input"));
        }
    }

    /**
     * The next reply, which must start with {@code word}; its text after the word.
     *
     * @throws IllegalStateException with the tail of the child's log if another reply comes, the
     *     child exits, or nothing comes in time
     */
    String expect(String word, Duration timeout) {
        String reply = next(timeout);
        if (reply == null) {
            throw new IllegalStateException("child " + name + " sent no '" + word + "' within " + timeout
                    + (process.isAlive() ? "" : " (it exited with " + process.exitValue() + ")") + "\n" + logTail());
        }
        if (!(reply.equals(word) || reply.startsWith(word + " "))) {
            throw new IllegalStateException(
                    "child " + name + " replied '" + reply + "' where '" + word + "' was expected\n" + logTail());
        }
        return reply.length() > word.length() ? reply.substring(word.length() + 1) : "";
    }

    /** The next reply, or null if none comes in time. */
    String next(Duration timeout) {
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (true) {
                String reply = replies.poll(50, TimeUnit.MILLISECONDS);
                if (reply != null) {
                    return reply;
                }
                if (!process.isAlive() && replies.isEmpty() || System.nanoTime() > deadline) {
                    return replies.poll();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    void pause() {
        Processes.pause(process);
    }

    void resume() {
        Processes.resume(process);
    }

    /** {@code kill -9}, waiting until it is gone. */
    void kill() {
        Processes.kill(process);
    }

    String logTail() {
        try {
            if (!Files.exists(log)) {
                return "(no log)";
            }
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "--- " + log + "\n" + String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                resume();
            } catch (RuntimeException e) {
                // it may have exited meanwhile
            }
            kill();
        }
    }

    /** The child's side of the protocol: commands in, replies out. */
    static final class Io {
        private final BufferedReader commands =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

        /** The next command, or null when the parent has gone. */
        String command() throws IOException {
            return commands.readLine();
        }

        /** Sends a reply line to the parent. */
        synchronized void reply(String line) {
            System.out.println(REPLY + line);
            System.out.flush();
        }

        /** Sends an operation line to the parent ({@link ChildOps}). */
        synchronized void op(String line) {
            System.out.println(OPS + line);
            System.out.flush();
        }
    }
}
