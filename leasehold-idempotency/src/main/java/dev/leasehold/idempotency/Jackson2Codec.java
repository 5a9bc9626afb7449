package dev.leasehold.idempotency;

import com.fasterxml.jackson.databind.ObjectMapper;

/** A {@link JsonCodec} over a Jackson 2 {@link ObjectMapper}; loaded only when Jackson 2 is used. */
final class Jackson2Codec implements JsonCodec {

    private final ObjectMapper mapper;

    Jackson2Codec(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    static boolean present() {
        try {
            Class.forName("com.fasterxml.jackson.databind.ObjectMapper", false, Jackson2Codec.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    static JsonCodec plain() {
        return new Jackson2Codec(new ObjectMapper().findAndRegisterModules());
    }

    @Override
    public String write(Object value) throws Exception {
        return mapper.writeValueAsString(value);
    }

    @Override
    public <T> T read(String json, Class<T> type) throws Exception {
        return mapper.readValue(json, type);
    }
}
