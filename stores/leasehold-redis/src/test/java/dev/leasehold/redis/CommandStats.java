package dev.leasehold.redis;

import io.lettuce.core.api.sync.RedisServerCommands;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Calls per command as a server counts them ({@code INFO commandstats}), for tests that count at the server. */
final class CommandStats {

    private static final Pattern LINE = Pattern.compile("(?m)^cmdstat_([a-z|_-]+):calls=(\\d+),");

    private final Map<String, Long> calls;

    private CommandStats(Map<String, Long> calls) {
        this.calls = calls;
    }

    static CommandStats of(RedisServerCommands<String, String> server) {
        return parse(server.info("commandstats"));
    }

    static CommandStats parse(String info) {
        Map<String, Long> calls = new HashMap<>();
        Matcher matcher = LINE.matcher(info);
        while (matcher.find()) {
            calls.put(matcher.group(1), Long.parseLong(matcher.group(2)));
        }
        return new CommandStats(calls);
    }

    /**
     * The requests the server has read from all its clients ({@code total_reads_processed}),
     * counting the {@code INFO} that asks.
     */
    static long readsProcessed(RedisServerCommands<String, String> server) {
        return server.info("stats")
                .lines()
                .filter(line -> line.startsWith("total_reads_processed:"))
                .mapToLong(line ->
                        Long.parseLong(line.substring(line.indexOf(':') + 1).trim()))
                .findFirst()
                .orElseThrow();
    }

    long calls(String command) {
        return calls.getOrDefault(command, 0L);
    }

    /** Calls of {@code command} since {@code before}. */
    long since(CommandStats before, String command) {
        return calls(command) - before.calls(command);
    }

    /** Script calls since {@code before}: EVALSHA, EVAL and FCALL together. */
    long scriptCallsSince(CommandStats before) {
        return since(before, "evalsha") + since(before, "eval") + since(before, "fcall");
    }
}
