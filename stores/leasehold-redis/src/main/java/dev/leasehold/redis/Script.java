package dev.leasehold.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.api.sync.BaseRedisCommands;
import io.lettuce.core.api.sync.RedisScriptingCommands;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.protocol.CommandType;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Lua script from this package's resources, called by its SHA-1 digest. A server that does not
 * know the script (restarted, flushed, a new cluster node) answers NOSCRIPT, and the script is sent
 * whole once with EVAL, which also caches it there.
 */
final class Script {

    private static final Logger log = LoggerFactory.getLogger(Script.class);

    /** The keys and arguments of one call. */
    record Call(String[] keys, String[] args) {}

    private final String name;
    private final String body;
    private final String sha;

    private Script(String name, String body) {
        this.name = name;
        this.body = body;
        this.sha = sha1(body);
    }

    static Script load(String name) {
        return new Script(name, text(name));
    }

    /** A script whose body is the named resources one after the other (shared Lua functions first). */
    static Script joined(String name, String... resources) {
        StringBuilder body = new StringBuilder();
        for (String resource : resources) {
            body.append(text(resource)).append('\n');
        }
        return new Script(name, body.toString());
    }

    private static String text(String name) {
        String resource = name + ".lua";
        try (InputStream in = Script.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("Lua script " + resource + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Lua script " + resource, e);
        }
    }

    /**
     * Loads the scripts into the server's script cache. A failure is logged, not thrown: the first
     * call of a script loads it through the NOSCRIPT fallback.
     */
    static void preload(RedisScriptingCommands<String, String> redis, Script... scripts) {
        for (Script script : scripts) {
            try {
                redis.scriptLoad(script.body());
            } catch (RedisException e) {
                log.warn("could not preload Lua script {}: {}", script.name(), e.getMessage());
            }
        }
    }

    String name() {
        return name;
    }

    String body() {
        return body;
    }

    String sha() {
        return sha;
    }

    <T> T run(RedisScriptingCommands<String, String> redis, ScriptOutputType type, String[] keys, String... args) {
        try {
            return redis.evalsha(sha, type, keys, args);
        } catch (RedisNoScriptException e) {
            return redis.eval(body, type, keys, args);
        }
    }

    /** As {@link #run}, without waiting: the reply completes the stage on the client's I/O thread. */
    <T> CompletionStage<T> runAsync(
            RedisScriptingAsyncCommands<String, String> redis, ScriptOutputType type, String[] keys, String... args) {
        return redis.<T>evalsha(sha, type, keys, args).exceptionallyCompose(failure -> {
            Throwable cause = unwrap(failure);
            return cause instanceof RedisNoScriptException
                    ? redis.<T>eval(body, type, keys, args)
                    : CompletableFuture.failedStage(cause);
        });
    }

    /** The encoded heads of this script's calls with a given number of keys: by SHA-1, and whole. */
    record Heads(byte[] sha, byte[] body) {}

    /** The heads of this script's calls with {@code keys} keys, for {@link ScriptArgs}. */
    Heads heads(int keys) {
        return new Heads(ScriptArgs.head(sha, keys), ScriptArgs.head(body, keys));
    }

    /** As {@link #run}, with arguments written straight into the client's buffer ({@link ScriptArgs}). */
    <T> T run(
            BaseRedisCommands<String, String> redis,
            Supplier<CommandOutput<String, String, T>> output,
            Heads heads,
            ScriptArgs args) {
        try {
            return redis.dispatch(CommandType.EVALSHA, output.get(), args);
        } catch (RedisNoScriptException e) {
            return redis.dispatch(CommandType.EVAL, output.get(), args.withHead(heads.body()));
        }
    }

    /**
     * As {@link #run}, without waiting: {@code reply} turns the script's reply into the stage's
     * value on the client's I/O thread, in the same step that receives it (one stage per call, not
     * one per step).
     */
    <T, R> CompletableFuture<R> runAsync(
            BaseRedisAsyncCommands<String, String> redis,
            Supplier<CommandOutput<String, String, T>> output,
            Heads heads,
            ScriptArgs args,
            Function<T, R> reply) {
        CompletableFuture<R> result = new CompletableFuture<>();
        redis.dispatch(CommandType.EVALSHA, output.get(), args).whenComplete((value, failure) -> {
            if (failure == null) {
                complete(result, reply, value);
            } else if (unwrap(failure) instanceof RedisNoScriptException) {
                redis.dispatch(CommandType.EVAL, output.get(), args.withHead(heads.body()))
                        .whenComplete((loaded, again) -> {
                            if (again == null) {
                                complete(result, reply, loaded);
                            } else {
                                result.completeExceptionally(unwrap(again));
                            }
                        });
            } else {
                result.completeExceptionally(unwrap(failure));
            }
        });
        return result;
    }

    private static <T, R> void complete(CompletableFuture<R> result, Function<T, R> reply, T value) {
        try {
            result.complete(reply.apply(value));
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
    }

    private static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    /** The SHA-1 of the text in lower-case hex, as Redis names scripts (and {@code redis.sha1hex}). */
    static String sha1(String text) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is required by every Java platform", e);
        }
    }
}
