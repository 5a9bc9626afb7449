package dev.leasehold.spring;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/** Finds the {@link Locked} (or otherwise annotated) methods of the beans a factory defines, without creating any bean. */
final class LockedMethods {

    /** A {@link Locked} method of a bean. */
    record Found(String bean, Class<?> type, Method method, Locked locked) {
        String describe() {
            return type.getSimpleName() + "." + method.getName();
        }
    }

    private LockedMethods() {}

    static List<Found> scan(ListableBeanFactory beans) {
        return annotated(beans, Locked.class).stream()
                .map(m -> new Found(m.bean(), m.type(), m.method(), m.annotation()))
                .toList();
    }

    /** A method of a bean carrying {@code annotation}. */
    record Annotated<A extends Annotation>(String bean, Class<?> type, Method method, A annotation) {
        /** The method as {@code Type.name(ParameterType, ...)}. */
        String signature() {
            StringBuilder out = new StringBuilder(type.getSimpleName())
                    .append('.')
                    .append(method.getName())
                    .append('(');
            Class<?>[] parameters = method.getParameterTypes();
            for (int i = 0; i < parameters.length; i++) {
                out.append(i == 0 ? "" : ", ").append(parameters[i].getSimpleName());
            }
            return out.append(')').toString();
        }
    }

    /** The methods carrying {@code annotation} (directly or merged) of the beans {@code beans} defines. */
    static <A extends Annotation> List<Annotated<A>> annotated(ListableBeanFactory beans, Class<A> annotation) {
        List<Annotated<A>> found = new ArrayList<>();
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
                A present = AnnotatedElementUtils.findMergedAnnotation(method, annotation);
                if (present != null) {
                    found.add(new Annotated<>(name, user, method, present));
                }
            });
        }
        return found;
    }

    static boolean usesRetryLater(ListableBeanFactory beans) {
        return scan(beans).stream().anyMatch(f -> f.locked().onBusy() == Locked.OnBusy.RETRY_LATER);
    }
}
