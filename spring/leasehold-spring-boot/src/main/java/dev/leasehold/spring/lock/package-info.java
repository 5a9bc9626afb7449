/**
 * {@link dev.leasehold.spring.lock.Locked} methods: the lease taken before the method's
 * transaction begins and released after it ends, {@link dev.leasehold.spring.lock.LockedContext}
 * for the running method's leases, and the degrade switch {@link
 * dev.leasehold.spring.lock.LockModeSwitch}.
 */
package dev.leasehold.spring.lock;
