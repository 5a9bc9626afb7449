package dev.leasehold.spring.lock;

import dev.leasehold.spring.internal.AnnotatedMethods;
import java.lang.reflect.Method;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;

/** Finds the {@link Locked} methods of the beans a factory defines, without creating any bean. */
final class LockedMethods {

    /** A {@link Locked} method of a bean. */
    record Found(String bean, Class<?> type, Method method, Locked locked) {
        String describe() {
            return type.getSimpleName() + "." + method.getName();
        }
    }

    private LockedMethods() {}

    static List<Found> scan(ListableBeanFactory beans) {
        return AnnotatedMethods.annotated(beans, Locked.class).stream()
                .map(m -> new Found(m.bean(), m.type(), m.method(), m.annotation()))
                .toList();
    }
}
