package dev.leasehold.spring.web;

import dev.leasehold.idempotency.JsonCodec;
import dev.leasehold.spring.internal.LeaseholdJson;
import java.nio.charset.StandardCharsets;

/** Side-effect results through the application's mapper ({@link LeaseholdJson}). */
final class LeaseholdJsonCodec implements JsonCodec {

    private final LeaseholdJson json;

    LeaseholdJsonCodec(LeaseholdJson json) {
        this.json = json;
    }

    @Override
    public String write(Object value) {
        return new String(json.write(value), StandardCharsets.UTF_8);
    }

    @Override
    public <T> T read(String text, Class<T> type) {
        return type.cast(json.read(text.getBytes(StandardCharsets.UTF_8), type));
    }
}
