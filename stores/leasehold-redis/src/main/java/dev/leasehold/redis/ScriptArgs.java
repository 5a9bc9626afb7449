package dev.leasehold.redis;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The arguments of one {@code EVALSHA} (or {@code EVAL}) of a script whose keys are one lock's
 * keys: the lease key and names made of it and a fixed suffix. Written straight into the client's
 * output buffer on its I/O thread: the keys from the lease key and the suffixes, the arguments a
 * caller fixes once (a store's TTLs, its wake channel, {@code PUBLISH}) as bytes encoded once, so
 * that a call builds no key string and no argument wrapper, and the I/O thread no length text.
 * Encodes to exactly what {@code EVALSHA sha numkeys key... arg...} with string arguments would.
 */
final class ScriptArgs extends CommandArgs<String, String> {

    private final byte[] head; // the SHA-1 (or the body) and the key count, encoded
    private final String lease;
    private final byte[][] suffixes; // one per key, the first empty: the lease key itself
    private final Object[] values; // each a String, encoded at write, or a byte[] from bulk()

    private ScriptArgs(byte[] head, String lease, byte[][] suffixes, Object[] values) {
        super(StringCodec.UTF8);
        this.head = head;
        this.lease = lease;
        this.suffixes = suffixes;
        this.values = values;
    }

    /** What a script call sends ahead of its keys: {@code sha numkeys} for EVALSHA, {@code body numkeys} for EVAL. */
    static byte[] head(String shaOrBody, int keys) {
        byte[] first = bulk(shaOrBody);
        byte[] count = bulk(Integer.toString(keys));
        byte[] both = new byte[first.length + count.length];
        System.arraycopy(first, 0, both, 0, first.length);
        System.arraycopy(count, 0, both, first.length, count.length);
        return both;
    }

    /** A key suffix, encoded once. */
    static byte[] suffix(String suffix) {
        return suffix.getBytes(StandardCharsets.UTF_8);
    }

    /** An argument fixed once, as the bulk string the protocol sends: {@code $<length>\r\n<bytes>\r\n}. */
    static byte[] bulk(String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        byte[] length = Integer.toString(bytes.length).getBytes(StandardCharsets.US_ASCII);
        byte[] encoded = new byte[1 + length.length + 2 + bytes.length + 2];
        encoded[0] = '$';
        System.arraycopy(length, 0, encoded, 1, length.length);
        int at = 1 + length.length;
        encoded[at++] = '\r';
        encoded[at++] = '\n';
        System.arraycopy(bytes, 0, encoded, at, bytes.length);
        at += bytes.length;
        encoded[at++] = '\r';
        encoded[at] = '\n';
        return encoded;
    }

    /**
     * The arguments of one call: the keys are {@code lease} followed by each suffix (the first
     * suffix is empty); each value a String or a {@link #bulk}.
     */
    static ScriptArgs of(byte[] head, String lease, byte[][] suffixes, Object... values) {
        return new ScriptArgs(head, lease, suffixes, values);
    }

    /** The same call with another head: the script's body for EVAL after a NOSCRIPT answer. */
    ScriptArgs withHead(byte[] otherHead) {
        return new ScriptArgs(otherHead, lease, suffixes, values);
    }

    @Override
    public int count() {
        return 2 + suffixes.length + values.length;
    }

    /** The lease key, which picks the cluster node (every key of the call shares its slot). */
    @Override
    public ByteBuffer getFirstEncodedKey() {
        return StringCodec.UTF8.encodeKey(lease);
    }

    @Override
    public void encode(ByteBuf buf) {
        buf.writeBytes(head);
        int leaseBytes = ByteBufUtil.utf8Bytes(lease);
        for (byte[] suffix : suffixes) {
            buf.writeByte('$');
            writeNumber(buf, leaseBytes + suffix.length);
            buf.writeByte('\r').writeByte('\n');
            ByteBufUtil.writeUtf8(buf, lease);
            buf.writeBytes(suffix);
            buf.writeByte('\r').writeByte('\n');
        }
        for (Object value : values) {
            if (value instanceof byte[] encoded) {
                buf.writeBytes(encoded);
            } else {
                CharSequence text = (CharSequence) value;
                buf.writeByte('$');
                writeNumber(buf, ByteBufUtil.utf8Bytes(text));
                buf.writeByte('\r').writeByte('\n');
                ByteBufUtil.writeUtf8(buf, text);
                buf.writeByte('\r').writeByte('\n');
            }
        }
    }

    /** A non-negative number in decimal digits, without making a string of it. */
    private static void writeNumber(ByteBuf buf, int number) {
        int divisor = 1;
        while (number / divisor >= 10) {
            divisor *= 10;
        }
        for (; divisor > 0; divisor /= 10) {
            buf.writeByte('0' + (number / divisor) % 10);
        }
    }

    /** The command's text as Lettuce's debug log shows it: the keys, never the arguments (an owner token is a secret). */
    @Override
    public String toCommandString() {
        return "<script of " + lease + ", " + suffixes.length + " keys, " + values.length + " arguments>";
    }

    @Override
    public String toString() {
        return "ScriptArgs" + toCommandString();
    }
}
