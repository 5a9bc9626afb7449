package dev.leasehold.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.springframework.validation.Errors;

/** etcd settings; the endpoints are used when the application has no {@code io.etcd.jetcd.Client} bean. */
public class LeaseholdEtcdProperties {

    private static final Pattern KEY_PREFIX = Pattern.compile("[A-Za-z0-9_.:/\\-]{1,64}");

    /**
     * Client URLs of the etcd members (http://host:port or https://host:port) for a client
     * Leasehold creates itself and closes on shutdown.
     */
    private List<String> endpoints = new ArrayList<>();
    /** Prefix of every etcd key Leasehold writes: 1 to 64 letters, digits and _ . : / -. */
    private String keyPrefix = "leasehold/";
    /**
     * How long one etcd call, and connecting, may take before the caller gets an error; keep it
     * shorter than the leases.
     */
    private Duration timeout = Duration.ofSeconds(5);

    public List<String> getEndpoints() {
        return endpoints;
    }

    public void setEndpoints(List<String> endpoints) {
        this.endpoints = endpoints;
    }

    public String getKeyPrefix() {
        return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    public Duration getTimeout() {
        return timeout;
    }

    public void setTimeout(Duration timeout) {
        this.timeout = timeout;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        LeaseholdProperties.positive(errors, "etcd.timeout", timeout);
        if (keyPrefix == null || !KEY_PREFIX.matcher(keyPrefix).matches()) {
            errors.reject(
                    "leasehold.etcd.key-prefix",
                    "leasehold.etcd.key-prefix must be 1 to 64 letters, digits, '_', '.', ':', '/' or '-', was "
                            + keyPrefix);
        }
        if (endpoints == null) {
            endpoints = new ArrayList<>();
        }
        for (int i = 0; i < endpoints.size(); i++) {
            String problem = LeaseholdProperties.endpointProblem(endpoints.get(i));
            if (problem != null) {
                String name = "leasehold.etcd.endpoints[" + i + "]";
                errors.reject(name, name + " " + problem + ", was '" + endpoints.get(i) + "'");
            }
        }
    }
}
