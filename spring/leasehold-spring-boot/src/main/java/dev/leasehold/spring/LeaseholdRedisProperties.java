package dev.leasehold.spring;

import java.time.Duration;
import org.springframework.validation.Errors;

/** Redis settings, used when no Lettuce client bean or connection factory is available. */
public class LeaseholdRedisProperties {
    /** Redis URI (redis://host:port) for a client Leasehold creates itself. */
    private String url;
    /** Prefix of every Redis key and channel Leasehold writes. */
    private String keyPrefix = "leasehold:";
    /** Command timeout of the client Leasehold creates from the URL, so callers fail fast when Redis hangs. */
    private Duration commandTimeout = Duration.ofSeconds(2);

    public Duration getCommandTimeout() {
        return commandTimeout;
    }

    public void setCommandTimeout(Duration commandTimeout) {
        this.commandTimeout = commandTimeout;
    }

    public String getUrl() {
        return url;
    }

    public void setUrl(String url) {
        this.url = url;
    }

    public String getKeyPrefix() {
        return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        LeaseholdProperties.positive(errors, "redis.command-timeout", commandTimeout);
        if (keyPrefix == null || keyPrefix.length() > 100) {
            errors.reject(
                    "leasehold.redis.key-prefix",
                    "leasehold.redis.key-prefix must be at most 100 characters, was " + keyPrefix);
        }
    }
}
