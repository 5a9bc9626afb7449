package dev.leasehold.spring.internal;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/** The annotated methods of the beans a factory defines, found without creating any bean. */
public final class AnnotatedMethods {

    private AnnotatedMethods() {}

    /** A method of a bean carrying {@code annotation}. */
    public record Annotated<A extends Annotation>(String bean, Class<?> type, Method method, A annotation) {
        /** The method as {@code Type.name(ParameterType, ...)}. */
        public String signature() {
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
    public static <A extends Annotation> List<Annotated<A>> annotated(ListableBeanFactory beans, Class<A> annotation) {
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

    /** Whether values of {@code type} finish their work after the method returned. */
    public static boolean isAsync(Class<?> type) {
        if (java.util.concurrent.Future.class.isAssignableFrom(type)
                || java.util.concurrent.CompletionStage.class.isAssignableFrom(type)) {
            return true;
        }
        for (Class<?> candidate = type; candidate != null; candidate = candidate.getSuperclass()) {
            if (isPublisher(candidate)) {
                return true;
            }
        }
        return false;
    }

    private static boolean isPublisher(Class<?> type) {
        if (type.getName().equals("org.reactivestreams.Publisher")
                || type.getName().equals("java.util.concurrent.Flow$Publisher")) {
            return true;
        }
        for (Class<?> implemented : type.getInterfaces()) {
            if (isPublisher(implemented)) {
                return true;
            }
        }
        return false;
    }
}
