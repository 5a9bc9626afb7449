/**
 * Watching and operating Leasehold: the {@code leasehold} and {@code leaseholdmode} Actuator
 * endpoints, whose write operations need the role {@code leasehold.admin.role}, the health
 * indicator, meters, observations and the audit log.
 */
package dev.leasehold.spring.actuator;
