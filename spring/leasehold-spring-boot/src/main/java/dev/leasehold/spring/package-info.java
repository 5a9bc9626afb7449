/**
 * Leasehold for Spring Boot: {@link dev.leasehold.spring.LeaseholdProperties} (every {@code
 * leasehold.*} property), the lease store and the {@code LockService}. Each feature has a package
 * and an auto-configuration of its own; see {@code docs/design/spring.md}.
 */
package dev.leasehold.spring;
