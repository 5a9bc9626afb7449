package dev.leasehold.spring;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/** Finds the {@link Locked} (or other annotated) methods of the beans a factory defines, without creating any bean. */
final class LockedMethods {

    /** A {@link Locked} method of a bean. */
    record Found(String bean, Class<?> type, Method method, Locked locked) {
        String describe() {
            return type.getSimpleName() + "." + method.getName();
        }
    }

    private LockedMethods() {}

    static List<Found> scan(ListableBeanFactory beans) {
        List<Found> found = new ArrayList<>();
        annotated(
                beans, Locked.class, (name, user, method, locked) -> found.add(new Found(name, user, method, locked)));
        return found;
    }

    /** What {@link #annotated} gives for each annotated method. */
    @FunctionalInterface
    interface Visitor<A extends Annotation> {
        void visit(String bean, Class<?> type, Method method, A annotation);
    }

    /** Visits every method of the factory's bean types that carries {@code annotation}. */
    static <A extends Annotation> void annotated(ListableBeanFactory beans, Class<A> annotation, Visitor<A> visitor) {
        for (String name : beans.getBeanDefinitionNames()) {
            Class<?> type;
            try {
                type = beans.getType(name, false);
            } catch (RuntimeException e) {
                continue; // a definition whose type cannot be resolved without creating it
            }
            if (type == null || type.getName().startsWith("org.springframework.")) {
                continue;
            }
            Class<?> user = ClassUtils.getUserClass(type);
            ReflectionUtils.doWithMethods(user, method -> {
                A found = AnnotatedElementUtils.findMergedAnnotation(method, annotation);
                if (found != null) {
                    visitor.visit(name, user, method, found);
                }
            });
        }
    }

    static boolean usesRetryLater(ListableBeanFactory beans) {
        return scan(beans).stream().anyMatch(f -> f.locked().onBusy() == Locked.OnBusy.RETRY_LATER);
    }
}
