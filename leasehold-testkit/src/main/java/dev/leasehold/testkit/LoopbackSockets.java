package dev.leasehold.testkit;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Which process made a TCP connection on this host, from Linux's {@code /proc}: the connection's
 * socket inode in {@code /proc/net/tcp} (or {@code tcp6}), then that inode among the process's
 * open files.
 */
final class LoopbackSockets {

    private static final List<Path> TABLES = List.of(Path.of("/proc/net/tcp"), Path.of("/proc/net/tcp6"));

    private LoopbackSockets() {}

    /** Whether connections' processes can be found here. */
    static boolean supported() {
        return Files.isReadable(TABLES.get(0));
    }

    /**
     * Whether process {@code pid} owns the socket whose local port is {@code localPort} and whose
     * remote port is {@code remotePort} (a connection from {@code localPort} to a server on {@code
     * remotePort}, as the process that made it sees it).
     */
    static boolean ownedBy(long pid, int localPort, int remotePort) {
        String inode = inode(localPort, remotePort);
        if (inode == null) {
            return false;
        }
        String wanted = "socket:[" + inode + "]";
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc", String.valueOf(pid), "fd"))) {
            for (Path fd : fds) {
                try {
                    if (Files.readSymbolicLink(fd).toString().equals(wanted)) {
                        return true;
                    }
                } catch (IOException closedMeanwhile) {
                    // that descriptor was closed while listed
                }
            }
        } catch (IOException noSuchProcess) {
            return false;
        }
        return false;
    }

    private static String inode(int localPort, int remotePort) {
        String local = String.format(Locale.ROOT, ":%04X", localPort);
        String remote = String.format(Locale.ROOT, ":%04X", remotePort);
        for (Path table : TABLES) {
            List<String> lines;
            try {
                lines = Files.readAllLines(table);
            } catch (IOException e) {
                continue;
            }
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9 && f[1].endsWith(local) && f[2].endsWith(remote)) {
                    return f[9];
                }
            }
        }
        return null;
    }
}
