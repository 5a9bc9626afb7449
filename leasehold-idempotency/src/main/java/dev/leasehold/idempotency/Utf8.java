package dev.leasehold.idempotency;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Strict UTF-8: text with an unpaired surrogate is refused, never written as {@code ?}. */
final class Utf8 {

    private Utf8() {}

    /**
     * The UTF-8 bytes of {@code text}.
     *
     * @throws IllegalArgumentException naming {@code what} and the index of an unpaired surrogate
     */
    static byte[] encode(String text, String what) {
        try {
            ByteBuffer bytes = StandardCharsets.UTF_8
                    .newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(text));
            return Arrays.copyOfRange(bytes.array(), bytes.position(), bytes.limit());
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(
                    what + " is not valid Unicode: unpaired surrogate at index " + unpaired(text));
        }
    }

    private static int unpaired(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return i;
            }
            if (Character.isLowSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }
}
