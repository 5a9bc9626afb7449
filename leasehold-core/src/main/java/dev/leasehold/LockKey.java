package dev.leasehold;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The name of one lockable resource: a namespace, an optional tenant and one or more id parts,
 * rendered as {@code namespace[:tenant]:id[:id...]}, such as {@code borrow:t42:book20240315}. Every
 * part is checked when the key is built (present, not blank, no control character, white space,
 * {@code :} or <code>{ }</code>; at most {@value #MAX_LENGTH} characters rendered); a violation is
 * an {@link IllegalArgumentException} naming the part.
 *
 * <p>One id part may be the key's hash tag ({@link #withHashTag}), rendered in braces ({@code
 * loan:t42:{acct7}:l1}): a store that shards by key keeps keys with one tag on one shard, so a batch
 * of them is one atomic step there. Identity and order are the rendered string, tag included.
 * Immutable and thread-safe.
 */
public final class LockKey implements Comparable<LockKey> {

    /** The longest rendered key accepted, in characters. */
    public static final int MAX_LENGTH = 200;

    private static final char SEPARATOR = ':';

    private final String namespace;
    private final String tenant;
    private final List<String> ids;
    private final int hashTagIndex; // the id part that is the hash tag, or -1
    private final String rendered;

    private LockKey(String namespace, String tenant, List<String> ids) {
        this(namespace, tenant, ids, -1);
    }

    private LockKey(String namespace, String tenant, List<String> ids, int hashTagIndex) {
        this.namespace = namespace;
        this.tenant = tenant;
        this.ids = ids;
        this.hashTagIndex = hashTagIndex;
        StringBuilder sb = new StringBuilder(namespace);
        if (tenant != null) {
            sb.append(SEPARATOR).append(tenant);
        }
        for (int i = 0; i < ids.size(); i++) {
            sb.append(SEPARATOR);
            if (i == hashTagIndex) {
                sb.append('{').append(ids.get(i)).append('}');
            } else {
                sb.append(ids.get(i));
            }
        }
        this.rendered = sb.toString();
        if (rendered.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("lock key is " + rendered.length() + " characters long, the limit is "
                    + MAX_LENGTH + ": " + rendered.substring(0, 40) + "...");
        }
    }

    /**
     * A key without a tenant.
     *
     * @throws IllegalArgumentException if a part is missing, blank or malformed, or no id is given
     */
    public static LockKey of(String namespace, String... ids) {
        return new LockKey(checkPart("namespace", namespace), null, checkIds(ids));
    }

    /**
     * A key scoped to a tenant, rendered {@code namespace:tenant:id...}.
     *
     * @throws IllegalArgumentException if a part is missing, blank or malformed, or no id is given
     */
    public static LockKey ofTenant(String namespace, String tenant, String... ids) {
        return new LockKey(checkPart("namespace", namespace), checkPart("tenant", tenant), checkIds(ids));
    }

    /**
     * Reads a rendered key back, for operations tools that receive keys as text. The first segment
     * becomes the namespace and the rest the ids, an id in braces the hash tag; since identity is
     * the rendered form, the result is the same lock as the key that was rendered.
     *
     * @throws IllegalArgumentException if the text is not a valid rendered key
     */
    public static LockKey parse(String rendered) {
        if (rendered == null) {
            throw new IllegalArgumentException("lock key is missing (null)");
        }
        String[] parts = rendered.split(String.valueOf(SEPARATOR), -1);
        if (parts.length < 2) {
            throw new IllegalArgumentException(
                    "lock key '" + printable(rendered) + "' needs a namespace and at least one id, separated by ':'");
        }
        String[] ids = new String[parts.length - 1];
        int hashTag = -1;
        for (int i = 0; i < ids.length; i++) {
            String part = parts[i + 1];
            if (part.length() > 2 && part.charAt(0) == '{' && part.charAt(part.length() - 1) == '}') {
                if (hashTag >= 0) {
                    throw new IllegalArgumentException("lock key '" + printable(rendered)
                            + "' names more than one hash tag in braces; at most one id part may be the tag");
                }
                hashTag = i;
                part = part.substring(1, part.length() - 1);
            }
            ids[i] = part;
        }
        LockKey key = of(parts[0], ids);
        return hashTag < 0 ? key : key.withHashTag(hashTag);
    }

    /**
     * This key with id part {@code idIndex} (0 for the first id) as its hash tag: stores that
     * shard by key keep all keys with the same tag on one shard. A different lock than this one
     * (see the class description).
     *
     * @throws IllegalArgumentException if there is no such id part
     */
    public LockKey withHashTag(int idIndex) {
        if (idIndex < 0 || idIndex >= ids.size()) {
            throw new IllegalArgumentException("hash tag index " + idIndex + " names no id part of lock key '"
                    + rendered + "', which has " + ids.size() + " (0 to " + (ids.size() - 1) + ")");
        }
        return new LockKey(namespace, tenant, ids, idIndex);
    }

    /** The id part that is this key's hash tag, if one was named. */
    public Optional<String> hashTag() {
        return hashTagIndex < 0 ? Optional.empty() : Optional.of(ids.get(hashTagIndex));
    }

    private static List<String> checkIds(String... ids) {
        if (ids == null || ids.length == 0) {
            throw new IllegalArgumentException("lock key needs at least one id part");
        }
        List<String> checked = new ArrayList<>(ids.length);
        for (int i = 0; i < ids.length; i++) {
            checked.add(checkPart(null, i, ids[i]));
        }
        return Collections.unmodifiableList(checked);
    }

    private static String checkPart(String name, String value) {
        return checkPart(name, -1, value);
    }

    /** Checks a part named {@code name}, or, when it is null, id part {@code id} (named only in an error). */
    private static String checkPart(String name, int id, String value) {
        if (value == null || !plain(value)) {
            return checkPartSlowly(name != null ? name : "id[" + id + "]", value);
        }
        return value;
    }

    /** Whether every character of a non-empty part is printable ASCII other than a space and the reserved ones. */
    private static boolean plain(String value) {
        if (value.isEmpty()) {
            return false;
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c <= ' ' || c >= 0x7f || c == SEPARATOR || c == '{' || c == '}') {
                return false;
            }
        }
        return true;
    }

    private static String checkPartSlowly(String name, String value) {
        if (value == null) {
            throw new IllegalArgumentException("lock key part " + name + " is missing (null)");
        }
        if (value.isBlank()) {
            throw new IllegalArgumentException("lock key part " + name + " is blank");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c) || Character.isWhitespace(c) || Character.isSpaceChar(c)) {
                throw new IllegalArgumentException("lock key part " + name + " '" + printable(value)
                        + "' contains a control or white-space character at index " + i);
            }
            if (c == SEPARATOR || c == '{' || c == '}') {
                throw new IllegalArgumentException("lock key part " + name + " '" + printable(value)
                        + "' contains the reserved character '" + c + "' at index " + i);
            }
        }
        return value;
    }

    private static String printable(String value) {
        StringBuilder sb = new StringBuilder();
        int limit = Math.min(value.length(), 60);
        for (int i = 0; i < limit; i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return limit < value.length() ? sb + "..." : sb.toString();
    }

    /** The namespace, the first part of the key. */
    public String namespace() {
        return namespace;
    }

    /** The tenant, or {@code null} for a key without one (and for a key read back by {@link #parse}). */
    public String tenant() {
        return tenant;
    }

    /** The id parts, in order. */
    public List<String> ids() {
        return ids;
    }

    /** The rendered key, never empty: the identity of the lock. */
    public String render() {
        return rendered;
    }

    @Override
    public int compareTo(LockKey other) {
        return rendered.compareTo(other.rendered);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LockKey other && rendered.equals(other.rendered);
    }

    @Override
    public int hashCode() {
        return rendered.hashCode();
    }

    @Override
    public String toString() {
        return rendered;
    }

    static LockKey requireKey(LockKey key) {
        return Objects.requireNonNull(key, "lock key is missing (null)");
    }
}
