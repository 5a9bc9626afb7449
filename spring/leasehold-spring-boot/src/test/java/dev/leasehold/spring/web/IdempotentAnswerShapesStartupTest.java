package dev.leasehold.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.spring.LeaseholdAutoConfigurations;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.io.Resource;
import org.springframework.http.ResponseEntity;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/** {@link Idempotent} answers that cannot be stored exactly are refused at startup, naming the method. */
class IdempotentAnswerShapesStartupTest {

    private final ApplicationContextRunner withH2 = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    LeaseholdAutoConfigurations.with(AopAutoConfiguration.class, DataSourceAutoConfiguration.class)))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:shapes-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                    "leasehold.stale-scan.enabled=false");

    /** Answers that are written after the method returns, or that are not a document. */
    public static class Downloads {
        @Idempotent
        public ResponseEntity<StreamingResponseBody> stream(String id) {
            return ResponseEntity.ok(out -> out.write(1));
        }

        @Idempotent
        public StreamingResponseBody bare(String id) {
            return out -> out.write(1);
        }

        @Idempotent
        public SseEmitter events(String id) {
            return new SseEmitter();
        }

        @Idempotent
        public DeferredResult<String> later(String id) {
            return new DeferredResult<>();
        }

        @Idempotent
        public Callable<String> callable(String id) {
            return () -> id;
        }

        @Idempotent
        public ResponseEntity<Resource> file(String id) {
            return ResponseEntity.notFound().build();
        }

        @Idempotent
        public Optional<StreamingResponseBody> maybe(String id) {
            return Optional.empty();
        }
    }

    /** Answers that can be stored exactly. */
    public static class Documents {
        @Idempotent
        public ResponseEntity<String> text(String id) {
            return ResponseEntity.ok(id);
        }

        @Idempotent
        public ResponseEntity<?> any(String id) {
            return ResponseEntity.ok(id);
        }

        @Idempotent
        public byte[] bytes(String id) {
            return new byte[0];
        }

        @Idempotent
        public void nothing(String id) {}
    }

    @Test
    void answersThatCannotBeStoredExactlyAreRefusedAtStartupNamingEachMethod() {
        withH2.withBean(Downloads.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("Downloads.stream returns ResponseEntity<StreamingResponseBody>")
                    .hasMessageContaining("Downloads.bare returns StreamingResponseBody")
                    .hasMessageContaining("Downloads.events returns SseEmitter")
                    .hasMessageContaining("Downloads.later returns DeferredResult")
                    .hasMessageContaining("Downloads.callable returns Callable")
                    .hasMessageContaining("Downloads.file returns ResponseEntity<Resource>")
                    .hasMessageContaining("Downloads.maybe returns Optional<StreamingResponseBody>")
                    .hasMessageContaining("cannot be stored exactly");
        });
    }

    @Test
    void documentsBytesTextAndNothingStart() {
        withH2.withBean(Documents.class)
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Documents.class));
    }
}
