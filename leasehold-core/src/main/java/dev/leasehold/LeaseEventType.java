package dev.leasehold;

/** What happened to a lease; see {@link LeaseEvent}. */
public enum LeaseEventType {
    /** A lease was granted (also after waiting; {@link LeaseEvent#waited()} tells how long). */
    ACQUIRED,
    /** A hold was added to a lease the owner already had. */
    REENTERED,
    /** The key was held by another owner and the caller started to wait. */
    WAITING,
    /** The key was held by another owner and the caller gave up (at once or after waiting). */
    BUSY,
    /** The store extended the lease. */
    RENEWED,
    /** A renewal attempt failed in the store; the lease may still be valid until its expiry. */
    RENEWAL_FAILED,
    /** The lease was lost before its holder released it. */
    LOST,
    /** The holder released the lease ({@link LeaseEvent#held()} tells for how long it was held). */
    RELEASED,
    /** An operator removed the lease from the store, whoever held it. */
    FORCE_RELEASED
}
