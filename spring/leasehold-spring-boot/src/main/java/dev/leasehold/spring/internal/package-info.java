/**
 * What several of the starter's features share: SpEL key expressions, the bridge to the
 * application's JSON mapper, scans for annotated methods, audit lines, the task scheduler of
 * background jobs. Not API: it may change in any release.
 */
package dev.leasehold.spring.internal;
