package dev.leasehold.redis;

import dev.leasehold.LockKey;
import java.util.List;

/**
 * Names the Redis keys and channel of one lock. All three carry one hash tag, so in a cluster they
 * live in one slot and a script can touch them together. The tag is the rendered lock key, or the
 * key's own {@linkplain LockKey#hashTag() hash tag} when it names one, so that keys with one tag
 * share a slot and a batch of them is one script:
 *
 * <pre>
 * {prefix}{borrow:t42:B1}                lease hash {owner, fence}, with the lease's TTL
 * {prefix}{borrow:t42:B1}:fence          fence counter, kept until the clock is fenceCounterTtl past its fence
 * {prefix}{borrow:t42:B1}:released       pub/sub channel for wake-ups
 * {prefix}{B7}{loan:t42:{B7}:L1}         the same three for a key with hash tag B7 (":fence", ":released")
 * {prefix}force-released                 pub/sub channel of every force-release, for holders anywhere
 * </pre>
 *
 * {@link LockKey} forbids braces in its parts and the prefix has none, so the first braces hold
 * exactly the tag; a tagged key's rendered form has braces and sits in a second pair, which
 * Redis ignores for hashing.
 */
final class RedisKeys {

    private static final String RELEASED = ":released";

    private final String prefix;

    RedisKeys(String prefix) {
        this.prefix = prefix;
    }

    String lease(LockKey key) {
        return key.hashTag()
                .map(tag -> prefix + "{" + tag + "}{" + key.render() + "}")
                .orElseGet(() -> prefix + "{" + key.render() + "}");
    }

    /** The rendered lock key of a lease key named by {@link #lease}. */
    String rendered(String leaseKey) {
        String inner = leaseKey.substring(prefix.length() + 1, leaseKey.length() - 1);
        int boundary = inner.indexOf("}{");
        return boundary < 0 ? inner : inner.substring(boundary + 2);
    }

    /**
     * SCAN MATCH patterns that find the lease keys of a namespace and nothing else: one for keys
     * without a hash tag of their own, one for keys with one.
     */
    List<String> leasePatterns(String namespace) {
        String start = glob(prefix) + "\\{";
        String keysOfNamespace = glob(namespace) + ":*\\}";
        return List.of(start + keysOfNamespace, start + "*\\}\\{" + keysOfNamespace);
    }

    /** Escapes the glob characters of SCAN MATCH. */
    private static String glob(String text) {
        StringBuilder escaped = new StringBuilder();
        for (char c : text.toCharArray()) {
            if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
                escaped.append('\\');
            }
            escaped.append(c);
        }
        return escaped.toString();
    }

    String fence(LockKey key) {
        return lease(key) + ":fence";
    }

    String channel(LockKey key) {
        return lease(key) + RELEASED;
    }

    /** The rendered lock key of a channel named by {@link #channel}. */
    String renderedOfChannel(String channel) {
        return rendered(channel.substring(0, channel.length() - RELEASED.length()));
    }

    String forceReleaseChannel() {
        return prefix + "force-released";
    }
}
