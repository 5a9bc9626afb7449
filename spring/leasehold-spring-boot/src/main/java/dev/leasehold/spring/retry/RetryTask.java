package dev.leasehold.spring.retry;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One delayed retry of a {@code @Locked(onBusy = RETRY_LATER)} call: which bean method to
 * call again, with which arguments, and how often it was tried. Immutable.
 *
 * @param key the de-duplication key, 32 lower-case hex characters (see {@link #keyOf}); the same
 *     key is run at most once to completion
 * @param bean the name of the bean whose proxy is called
 * @param method the method name
 * @param parameterTypes the method's parameter type names, to find the overload
 * @param arguments the arguments as a JSON array
 * @param lockKey the rendered lock key that was busy, for logs and operators
 * @param attempt how many deliveries found the key busy so far, from 0
 */
public record RetryTask(
        String key,
        String bean,
        String method,
        List<String> parameterTypes,
        String arguments,
        String lockKey,
        int attempt) {

    private static final Pattern KEY = Pattern.compile("[0-9a-f]{32}");

    /** Checks every field. */
    public RetryTask {
        Objects.requireNonNull(key, "key");
        if (!KEY.matcher(key).matches()) {
            throw new IllegalArgumentException("retry key must be 32 lower-case hex characters, was " + key);
        }
        requireText("bean", bean);
        requireText("method", method);
        parameterTypes = List.copyOf(Objects.requireNonNull(parameterTypes, "parameterTypes"));
        requireText("arguments", arguments);
        requireText("lockKey", lockKey);
        if (attempt < 0) {
            throw new IllegalArgumentException("attempt must be >= 0, was " + attempt);
        }
    }

    private static void requireText(String name, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " must not be blank");
        }
    }

    /** The de-duplication key for any text: the first 32 hex characters of its SHA-256. */
    public static String keyOf(String text) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /** The same task, one attempt later. */
    public RetryTask nextAttempt() {
        return new RetryTask(key, bean, method, parameterTypes, arguments, lockKey, attempt + 1);
    }
}
