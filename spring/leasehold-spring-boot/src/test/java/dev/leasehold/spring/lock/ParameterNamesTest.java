package dev.leasehold.spring.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.web.IdempotencyKeyReusedException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.DefaultParameterNameDiscoverer;

/**
 * Classes compiled the way a build without {@code -parameters} compiles them (javac at test time,
 * debug information on, no parameter names): an expression naming a parameter would be null on
 * every call, so startup refuses it, naming the method and the fix; positional names still work.
 */
class ParameterNamesTest {

    private static final Map<String, String> SOURCES = Map.of(
            "compiled.NamelessTransfers", """
            package compiled;

            import dev.leasehold.spring.lock.Locked;

            public class NamelessTransfers {
                @Locked(namespace = "acct", key = "#p1", tenant = "#tenant")
                public String move(String tenant, String account) {
                    return tenant + "/" + account;
                }
            }
            """, "compiled.NamelessPayments", """
            package compiled;

            import dev.leasehold.spring.web.Idempotent;

            public class NamelessPayments {
                @Idempotent(key = "#p1", scope = "'pay:' + #account", perCaller = false)
                public String pay(String account, String key, long cents) {
                    return "paid " + cents + " from " + account;
                }
            }
            """, "compiled.PositionalPayments", """
            package compiled;

            import dev.leasehold.spring.web.Idempotent;
            import dev.leasehold.spring.lock.Locked;

            public class PositionalPayments {
                @Locked(namespace = "acct", key = "#a0", tenant = "#p2")
                @Idempotent(key = "#p1", scope = "'pay:' + #p0", perCaller = false)
                public String pay(String account, String key, String tenant, long cents) {
                    return "paid " + cents + " from " + tenant + "/" + account;
                }
            }
            """);

    @TempDir
    static Path classes;

    private static ClassLoader loader;

    private final ApplicationContextRunner h2 = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    LeaseholdAutoConfigurations.with(AopAutoConfiguration.class, DataSourceAutoConfiguration.class)))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:names-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                    "leasehold.stale-scan.enabled=false");

    @BeforeAll
    static void compileWithoutParameterNames() throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<JavaFileObject> units = new ArrayList<>();
        SOURCES.forEach((name, source) -> units.add(new Source(name, source)));
        String classPath = Path.of(Locked.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .toString();
        // -g as Maven's compiler plugin passes it by default; no -parameters
        List<String> options = List.of("-g", "-classpath", classPath, "-d", classes.toString());
        assertThat(javac.getTask(null, null, null, options, null, units).call())
                .as("javac")
                .isTrue();
        loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, ParameterNamesTest.class.getClassLoader());
    }

    private static Class<?> compiled(String name) {
        try {
            return Class.forName(name, true, loader);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private ApplicationContextRunner with(String name) {
        Class type = compiled(name);
        return h2.withClassLoader(loader).withBean(type);
    }

    private static Object call(Object bean, String method, Object... arguments) throws Throwable {
        for (Method candidate : bean.getClass().getMethods()) {
            if (candidate.getName().equals(method)) {
                try {
                    return candidate.invoke(bean, arguments);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            }
        }
        throw new IllegalArgumentException(method);
    }

    @Test
    void theCompiledClassesReallyHaveNoParameterNames() throws Exception {
        Method move = compiled("compiled.NamelessTransfers").getMethod("move", String.class, String.class);
        assertThat(new DefaultParameterNameDiscoverer().getParameterNames(move)).isNull();
    }

    @Test
    void aLockedTenantNamedByAParameterNameIsRefusedAtStartupNamingTheMethodAndTheFix() {
        with("compiled.NamelessTransfers").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("NamelessTransfers.move(String, String)")
                    .hasMessageContaining("@Locked(tenant = \"#tenant\")")
                    .hasMessageContaining("compiled without parameter names")
                    .hasMessageContaining("compile with -parameters")
                    .hasMessageContaining("#p0");
        });
    }

    @Test
    void anIdempotentScopeNamedByAParameterNameIsRefusedAtStartupNamingTheMethodAndTheFix() {
        with("compiled.NamelessPayments").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("NamelessPayments.pay(String, String, long)")
                    .hasMessageContaining("@Idempotent(scope = \"'pay:' + #account\")")
                    .hasMessageContaining("compile with -parameters")
                    .hasMessageContaining("#p0");
        });
    }

    @Test
    void positionalNamesWorkWithoutParameterNames() {
        with("compiled.PositionalPayments").run(context -> {
            assertThat(context).hasNotFailed();
            Object payments = context.getBean(compiled("compiled.PositionalPayments"));
            assertThat(call(payments, "pay", "A1", "k-1", "t1", 500L)).isEqualTo("paid 500 from t1/A1");
            assertThat(call(payments, "pay", "A2", "k-1", "t1", 500L))
                    .as("another account's key k-1 lives in its own scope")
                    .isEqualTo("paid 500 from t1/A2");
            assertThat(call(payments, "pay", "A1", "k-1", "t1", 500L)).isEqualTo("paid 500 from t1/A1");
            assertThatThrownBy(() -> call(payments, "pay", "A1", "k-1", "t1", 700L))
                    .isInstanceOf(IdempotencyKeyReusedException.class);
        });
    }

    /** Compiled with -parameters, but naming no parameter of the method. */
    public static class Misspelled {
        @Locked(namespace = "acct", key = "#acount")
        public void close(String account) {}
    }

    @Test
    void aNameThatIsNoParameterIsRefusedAtStartup() {
        h2.withBean(Misspelled.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("Misspelled.close(String)")
                    .hasMessageContaining("@Locked(key = \"#acount\")")
                    .hasMessageContaining(
                            "names #acount, which is not a parameter of the method (its parameters: account)")
                    .hasMessageContaining("would be null on every call");
        });
    }

    /** A source file held in memory. */
    private static final class Source extends SimpleJavaFileObject {
        private final String code;

        Source(String name, String code) {
            super(uri(name), Kind.SOURCE);
            this.code = code;
        }

        private static URI uri(String name) {
            try {
                return new URI("string:///" + name.replace('.', '/') + Kind.SOURCE.extension);
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException(e);
            }
        }

        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return code;
        }
    }
}
