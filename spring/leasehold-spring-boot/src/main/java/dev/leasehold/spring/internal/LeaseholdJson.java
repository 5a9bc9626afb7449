package dev.leasehold.spring.internal;

import dev.leasehold.spring.web.Idempotent;
import java.lang.reflect.Type;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The application's own JSON mapper, whichever Jackson it is, for what Leasehold stores: responses
 * of {@link Idempotent} methods, payload fingerprints, arguments of delayed retries and side-effect
 * results. Chosen once, in this order:
 *
 * <ol>
 *   <li>the application's Jackson 3 {@code tools.jackson.databind.ObjectMapper} bean (the {@code
 *       JsonMapper} Spring Boot 4 configures, with every module and setting the application gave it);
 *   <li>else its Jackson 2 {@code com.fasterxml.jackson.databind.ObjectMapper} bean;
 *   <li>else a default Jackson 3 {@code JsonMapper} (which handles {@code java.time} itself);
 *   <li>else a Jackson 2 mapper with the modules found on the class path.
 * </ol>
 *
 * Nothing here needs Jackson 2. Thread-safe.
 */
public interface LeaseholdJson {

    /** Which mapper this is, for logs. */
    String describe();

    /**
     * The JSON bytes of {@code value}.
     *
     * @throws JsonFailure if the mapper cannot write it
     */
    byte[] write(Object value);

    /**
     * {@code json} read as a {@code type}.
     *
     * @throws JsonFailure if it cannot be read as one
     */
    Object read(byte[] json, Type type);

    /**
     * The elements of a JSON array, each read as the type at its index.
     *
     * @throws JsonFailure if it cannot be read so
     */
    Object[] readArray(String json, Type[] types);

    /** A mapper failed; the message says what could not be written or read. */
    final class JsonFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        JsonFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The class name of a value, for messages. */
    public static String typeOf(Object value) {
        return value == null ? "null" : value.getClass().getName();
    }

    /** The mapper to use in the application of {@code beans}, see the order above. */
    public static LeaseholdJson of(ListableBeanFactory beans) {
        ClassLoader loader = LeaseholdJson.class.getClassLoader();
        boolean jackson3 = ClassUtils.isPresent("tools.jackson.databind.ObjectMapper", loader);
        boolean jackson2 = ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", loader);
        if (jackson3) {
            LeaseholdJson found = Jackson3Json.fromBean(beans);
            if (found != null) {
                return found;
            }
        }
        if (jackson2) {
            LeaseholdJson found = Jackson2Json.fromBean(beans);
            if (found != null) {
                return found;
            }
        }
        if (jackson3) {
            return Jackson3Json.standalone();
        }
        if (jackson2) {
            return Jackson2Json.standalone();
        }
        throw new IllegalStateException("Leasehold needs Jackson to store responses and retries: add"
                + " tools.jackson.core:jackson-databind (Jackson 3, which Spring Boot 4's web starter brings)");
    }
}
