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

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

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
