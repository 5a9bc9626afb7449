package dev.leasehold.testkit;

/**
 * A lease as read straight from the backend by a conformance test's probe, bypassing the store
 * under test: who owns the key and with which fence.
 *
 * @param owner the owner token stored
 * @param fence the fence stored
 */
public record RawLease(String owner, long fence) {}
