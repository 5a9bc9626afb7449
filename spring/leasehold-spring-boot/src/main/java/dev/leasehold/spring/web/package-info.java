/**
 * {@link dev.leasehold.spring.web.Idempotent} methods (at most once per idempotency key) and
 * Leasehold's problem responses in Spring MVC ({@link dev.leasehold.spring.web.LeaseholdProblemHandler}).
 */
package dev.leasehold.spring.web;
