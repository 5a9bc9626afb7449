package dev.leasehold.idempotency;

import java.time.Duration;
import java.util.Optional;

/**
 * The claim path of {@link RequestRecords#begin}: find or create the record, re-claim a failed one,
 * take over a stale one. Each change is one compare-and-set on the token and fence that were read;
 * losing a race means reading again.
 */
final class RequestClaims {

    private static final int ATTEMPTS = 5;

    private final RequestTable table;
    private final Duration staleAfter;
    private final Duration lockWait;

    RequestClaims(RequestTable table, Duration staleAfter, Duration lockWait) {
        this.table = table;
        this.staleAfter = staleAfter;
        this.lockWait = lockWait;
    }

    /** What the caller may do with the request of ({@code scope}, {@code clientKey}); arguments checked. */
    Claim claim(String scope, String clientKey, String fingerprint) {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            Optional<RequestTable.Row> found = table.read(scope, clientKey);
            if (found.isEmpty()) {
                String id = Jdbc.newId();
                String token = Jdbc.newId();
                if (table.insert(id, scope, clientKey, fingerprint, token)) {
                    return new Claim.Claimed(
                            new RequestHandle(id, scope, clientKey, token, 1, Claim.Kind.NEW, null, null, 0));
                }
                continue; // a twin created it first: read the winner
            }
            RequestTable.Row row = found.get();
            if (!Fingerprints.same(row.fingerprint(), fingerprint)) {
                return new Claim.Mismatch(row.id());
            }
            Claim claim =
                    switch (row.status()) {
                        case "SUCCESS" -> new Claim.Replay(row.id(), row.response());
                        case "ERROR" -> retry(row, scope, clientKey);
                        case "PROCESSING" -> takeOver(row, scope, clientKey);
                        default ->
                            throw new IllegalStateException(
                                    "request " + row.id() + " has unknown status " + row.status());
                    };
            if (claim != null) {
                return claim;
            }
            // Lost a race for the same transition: read again.
        }
        return new Claim.InProgress(
                table.read(scope, clientKey).map(RequestTable.Row::id).orElse("unknown"));
    }

    /** ERROR to PROCESSING under a new token; null if another caller changed the record first. */
    private Claim retry(RequestTable.Row row, String scope, String clientKey) {
        String token = Jdbc.newId();
        int updated = table.update(
                "update request", row.id(), Statements.RECLAIM_ERROR, token, row.id(), row.token(), row.fence());
        return updated == 1 ? claimed(row, scope, clientKey, token, Claim.Kind.RETRY) : null;
    }

    /**
     * A fresh PROCESSING record is in progress; a stale one is taken over under a new token, unless
     * its row is locked: then it belongs to a live transaction (an owner marking it done) and is in
     * progress too. Null if another caller changed the record first.
     */
    private Claim takeOver(RequestTable.Row row, String scope, String clientKey) {
        if (row.ageMs() < staleAfter.toMillis()) {
            return new Claim.InProgress(row.id());
        }
        String token = Jdbc.newId();
        int taken = LockTimeouts.update(
                table.dataSource(),
                table.database(),
                lockWait,
                "leasehold_request",
                row.id(),
                "take over request",
                true,
                table.sql(Statements.TAKE_OVER_REQUEST),
                token,
                row.id(),
                row.token(),
                row.fence(),
                staleAfter.toMillis());
        if (taken == LockTimeouts.LOCKED) {
            return new Claim.InProgress(row.id());
        }
        return taken == 1 ? claimed(row, scope, clientKey, token, Claim.Kind.TAKE_OVER) : null;
    }

    /** The claim, with every field it changed as it was before, for a give-back. */
    private static Claim.Claimed claimed(
            RequestTable.Row row, String scope, String clientKey, String token, Claim.Kind kind) {
        return new Claim.Claimed(new RequestHandle(
                row.id(),
                scope,
                clientKey,
                token,
                row.fence() + 1,
                kind,
                row.status(),
                row.token(),
                row.updatedAtMs(),
                row.errorMessage(),
                row.expiresAtMs()));
    }
}
