package dev.leasehold.spring.web;

/**
 * The tenant that qualifies an {@link Idempotent} call's scope is not a valid tenant (it does not
 * match {@code leasehold.idempotency.tenant-pattern}): the caller's input is wrong (HTTP 400,
 * problem type {@code tenant-invalid} with the {@code header} it came from, if any), nothing ran.
 */
public class InvalidTenantException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String header;

    /**
     * A refused tenant.
     *
     * @param header the request header the tenant came from, or null for a tenant expression
     */
    public InvalidTenantException(String header, String message) {
        super(message);
        this.header = header;
    }

    /** The request header the tenant came from, or null if it came from a tenant expression. */
    public String header() {
        return header;
    }
}
