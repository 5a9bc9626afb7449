package dev.leasehold.redis;

import dev.leasehold.LockKey;
import java.util.List;
import java.util.Optional;

/**
 * Names the Redis keys and channels of one lock. All carry one hash tag (the rendered key, or the
 * key's own {@linkplain LockKey#hashTag() hash tag}), so on a cluster they share a slot and one
 * script touches them together. {@link LockKey} forbids braces in its parts, so the first braces
 * hold exactly the tag. The layout is in {@code docs/design/redis.md}.
 */
final class RedisKeys {

    static final String RELEASED = ":released";
    static final String LISTENING = ":listening";
    static final String FENCE = ":fence";

    private final String prefix;

    RedisKeys(String prefix) {
        this.prefix = prefix;
    }

    String lease(LockKey key) {
        Optional<String> tag = key.hashTag(); // empty: a shared instance, nothing allocated
        return tag.isEmpty() ? prefix + "{" + key.render() + "}" : prefix + "{" + tag.get() + "}{" + key.render() + "}";
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
        return lease(key) + FENCE;
    }

    String channel(LockKey key) {
        return lease(key) + RELEASED;
    }

    /**
     * The key's listening mark: present (with a TTL) while some store has subscribers of the key's
     * channel, so that a release publishes only then (see {@link RedisNotices}).
     */
    String listening(LockKey key) {
        return lease(key) + LISTENING;
    }

    /** The listening mark of the key whose channel is {@code channel}. */
    String listeningOfChannel(String channel) {
        return channel.substring(0, channel.length() - RELEASED.length()) + LISTENING;
    }

    /** The rendered lock key of a channel named by {@link #channel}. */
    String renderedOfChannel(String channel) {
        return rendered(channel.substring(0, channel.length() - RELEASED.length()));
    }

    String forceReleaseChannel() {
        return prefix + "force-released";
    }
}
