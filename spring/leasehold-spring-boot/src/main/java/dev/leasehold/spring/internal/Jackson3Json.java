package dev.leasehold.spring.internal;

import java.lang.reflect.Type;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/** {@link LeaseholdJson} on a Jackson 3 mapper. Loaded only when Jackson 3 is on the class path. */
final class Jackson3Json implements LeaseholdJson {

    private static final String PROBLEM_DETAIL = "org.springframework.http.ProblemDetail";
    private static final String PROBLEM_MIXIN = "org.springframework.http.converter.json.ProblemDetailJacksonMixin";

    private final ObjectMapper mapper;
    private final String description;

    Jackson3Json(ObjectMapper mapper, String description) {
        this.mapper = withProblemDetails(mapper);
        this.description = description;
    }

    static LeaseholdJson fromBean(ListableBeanFactory beans) {
        ObjectMapper mapper = beans.getBeanProvider(JsonMapper.class).getIfUnique();
        if (mapper == null) {
            mapper = beans.getBeanProvider(ObjectMapper.class).getIfUnique();
        }
        return mapper == null ? null : new Jackson3Json(mapper, "the application's Jackson 3 mapper");
    }

    static LeaseholdJson standalone() {
        return new Jackson3Json(JsonMapper.builder().build(), "a default Jackson 3 mapper");
    }

    /** Problem details written as Spring MVC writes them: their properties at the top level. */
    private static ObjectMapper withProblemDetails(ObjectMapper mapper) {
        ClassLoader loader = Jackson3Json.class.getClassLoader();
        if (!ClassUtils.isPresent(PROBLEM_MIXIN, loader)) {
            return mapper;
        }
        try {
            return mapper.rebuild()
                    .addMixIn(ClassUtils.forName(PROBLEM_DETAIL, loader), ClassUtils.forName(PROBLEM_MIXIN, loader))
                    .build();
        } catch (ClassNotFoundException | LinkageError e) {
            return mapper;
        }
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public byte[] write(Object value) {
        try {
            return mapper.writeValueAsBytes(value);
        } catch (JacksonException e) {
            throw new JsonFailure(
                    "cannot write " + LeaseholdJson.typeOf(value) + " as JSON: " + e.getOriginalMessage(), e);
        }
    }

    @Override
    public Object read(byte[] json, Type type) {
        try {
            return mapper.readValue(json, mapper.constructType(type));
        } catch (JacksonException e) {
            throw new JsonFailure("cannot read JSON as " + type.getTypeName() + ": " + e.getOriginalMessage(), e);
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
        } catch (JacksonException e) {
            throw new JsonFailure("cannot read the JSON array of arguments: " + e.getOriginalMessage(), e);
        }
    }
}
