package dev.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Signals to processes by pid, free loopback ports and installed tools. */
final class Processes {

    private Processes() {}

    /** Sends {@code signal} ({@code STOP}, {@code CONT}, {@code KILL}) to {@code pid}, as {@code kill -SIGNAL}. */
    static void signal(long pid, String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(pid))
                    .redirectErrorStream(true)
                    .start();
            String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while signalling " + pid, e);
        }
    }

    static void pause(Process process) {
        signal(process.pid(), "STOP");
    }

    static void resume(Process process) {
        signal(process.pid(), "CONT");
    }

    /** {@code kill -9}, and waits until the process is gone. */
    static void kill(Process process) {
        process.destroyForcibly();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("process " + process.pid() + " survived kill -9 for 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while killing " + process.pid(), e);
        }
    }

    /**
     * A loopback port below Linux's ephemeral range (32768 and up), free when tried and never
     * handed out twice by this JVM: a port from {@code bind(0)} comes from the range outgoing
     * connections use too, and one of them can take it before the server binds it.
     */
    static synchronized int freePort() {
        for (int tries = 0; tries < 500; tries++) {
            int port = java.util.concurrent.ThreadLocalRandom.current().nextInt(10_000, 20_000);
            if (!GIVEN.add(port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port));
                return port;
            } catch (IOException busy) {
                // in use: another one
            }
        }
        throw new UncheckedIOException(new IOException("no free loopback port between 10000 and 20000"));
    }

    private static final java.util.Set<Integer> GIVEN = new java.util.HashSet<>();

    /** Whether {@code command --version} runs. */
    static boolean installed(String command) {
        try {
            Process process = new ProcessBuilder(command, "--version")
                    .redirectErrorStream(true)
                    .start();
            process.getInputStream().readAllBytes();
            return process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
