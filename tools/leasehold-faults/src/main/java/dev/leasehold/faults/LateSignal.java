package dev.leasehold.faults;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;

/**
 * Evidence taken while a signal a row waits for (a holder's {@code onLost}) is overdue: every
 * thread of this JVM with its stack and its locks, written next to the suite's logs, and the time
 * the JVM spent in garbage collection, so that a late signal can be told apart from a stalled
 * JVM after the run.
 */
final class LateSignal {

    private static final int FRAMES = 40;

    private LateSignal() {}

    /** Milliseconds this JVM has spent collecting garbage so far (all collectors). */
    static long gcMillis() {
        long total = 0;
        for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, collector.getCollectionTime());
        }
        return total;
    }

    /**
     * Writes every thread's stack to {@code <faults.logs>/<name>.txt}, headed by {@code header}:
     * the file's path, or what went wrong writing it.
     */
    static String dumpThreads(String name, String header) {
        StringBuilder text =
                new StringBuilder(header).append("\nat ").append(Instant.now()).append("\n\n");
        for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
            text.append('"').append(info.getThreadName()).append("\" ").append(info.getThreadState());
            if (info.getLockName() != null) {
                text.append(" on ").append(info.getLockName());
            }
            if (info.getLockOwnerName() != null) {
                text.append(" owned by \"").append(info.getLockOwnerName()).append('"');
            }
            text.append('\n');
            StackTraceElement[] stack = info.getStackTrace();
            for (int i = 0; i < Math.min(stack.length, FRAMES); i++) {
                text.append("    at ").append(stack[i]).append('\n');
            }
            if (stack.length > FRAMES) {
                text.append("    ... ").append(stack.length - FRAMES).append(" more\n");
            }
            text.append('\n');
        }
        Path file = Path.of(System.getProperty("faults.logs", "target/faults"), name.replace(':', '-') + ".txt");
        try {
            Files.createDirectories(file.getParent());
            Files.writeString(file, text, StandardCharsets.UTF_8);
            return file.toString();
        } catch (IOException e) {
            return "no thread dump (" + e + ")";
        }
    }
}
