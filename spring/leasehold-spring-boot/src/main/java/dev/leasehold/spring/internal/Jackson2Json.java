package dev.leasehold.spring.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.lang.reflect.Type;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * {@link LeaseholdJson} on a Jackson 2 mapper, for applications that still have one and no Jackson
 * 3. Loaded only when Jackson 2 is on the class path.
 */
final class Jackson2Json implements LeaseholdJson {

    private final ObjectMapper mapper;
    private final String description;

    Jackson2Json(ObjectMapper mapper, String description) {
        this.mapper = mapper;
        this.description = description;
    }

    static LeaseholdJson fromBean(ListableBeanFactory beans) {
        ObjectMapper mapper = beans.getBeanProvider(ObjectMapper.class).getIfUnique();
        return mapper == null ? null : new Jackson2Json(mapper, "the application's Jackson 2 mapper");
    }

    static LeaseholdJson standalone() {
        return new Jackson2Json(JsonMapper.builder().findAndAddModules().build(), "a default Jackson 2 mapper");
    }

    /** The Jackson 2 mapper itself (for APIs that take one). */
    ObjectMapper mapper() {
        return mapper;
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public byte[] write(Object value) {
        try {
            return mapper.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new JsonFailure(
                    "cannot write " + LeaseholdJson.typeOf(value) + " as JSON: " + e.getOriginalMessage(), e);
        }
    }

    @Override
    public Object read(byte[] json, Type type) {
        try {
            return mapper.readValue(json, mapper.constructType(type));
        } catch (IOException e) {
            throw new JsonFailure("cannot read JSON as " + type.getTypeName() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Object[] readArray(String json, Type[] types) {
        try {
            JsonNode array = mapper.readTree(json);
            Object[] values = new Object[types.length];
            for (int i = 0; i < types.length; i++) {
                values[i] = mapper.treeToValue(array.get(i), mapper.constructType(types[i]));
            }
            return values;
        } catch (JsonProcessingException e) {
            throw new JsonFailure("cannot read the JSON array of arguments: " + e.getOriginalMessage(), e);
        }
    }
}
