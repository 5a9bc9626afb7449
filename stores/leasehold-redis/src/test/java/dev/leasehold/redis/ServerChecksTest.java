package dev.leasehold.redis;

import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.sync.RedisServerCommands;
import java.lang.reflect.Proxy;
import org.junit.jupiter.api.Test;

/**
 * What the eviction check does when {@code CONFIG GET} fails, on a stand-in for the server's
 * commands whose {@code CONFIG GET} fails as given (the answers of real servers are in {@link
 * RedisServerChecksTest}).
 */
class ServerChecksTest {

    @Test
    void aServerThatDoesNotAnswerConfigGetIsRefusedNotAcceptedUnchecked() {
        RedisServerCommands<String, String> hung =
                failingConfigGet(new RedisCommandTimeoutException("Command timed out after 1 second(s)"));
        assertThatThrownBy(() -> ServerChecks.checkEviction("127.0.0.1:6390", hung, false))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("could not check maxmemory-policy of Redis at 127.0.0.1:6390")
                .hasMessageContaining("timed out")
                .hasCauseInstanceOf(RedisCommandTimeoutException.class);
    }

    @Test
    void aServerThatRefusesConfigGetWithAnErrorReplyIsAccepted() {
        RedisServerCommands<String, String> managed = failingConfigGet(new RedisCommandExecutionException(
                "NOPERM this user has no permissions to run the 'config|get' command"));
        assertThatNoException().isThrownBy(() -> ServerChecks.checkEviction("127.0.0.1:6390", managed, false));
    }

    @SuppressWarnings("unchecked")
    private static RedisServerCommands<String, String> failingConfigGet(RedisException failure) {
        return (RedisServerCommands<String, String>) Proxy.newProxyInstance(
                ServerChecksTest.class.getClassLoader(),
                new Class<?>[] {RedisServerCommands.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("configGet")) {
                        throw failure;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }
}
