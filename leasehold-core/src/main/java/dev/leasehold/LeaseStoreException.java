package dev.leasehold;

/**
 * Thrown when the lease store cannot be reached or fails (a timeout, a lost connection, a rejected
 * statement). It names the key and the operation. When it is thrown, the outcome of the operation
 * is unknown to the caller; the engine never reports a lease it has not seen granted.
 */
public class LeaseStoreException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** A store failure during {@code operation} on {@code key}. */
    public LeaseStoreException(String operation, String key, Throwable cause) {
        super(operation + " of lock " + key + " failed in the lease store: " + describe(cause), cause);
    }

    private static String describe(Throwable cause) {
        if (cause == null) {
            return "no cause given";
        }
        String message = cause.getMessage();
        return cause.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }
}
