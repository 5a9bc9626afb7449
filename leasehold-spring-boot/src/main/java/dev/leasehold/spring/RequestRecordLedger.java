package dev.leasehold.spring;

import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.Claim;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.idempotency.StoredResponse;

/** A {@link RetryLedger} on request records, scope {@code leasehold:retry}, one record per retry key. */
final class RequestRecordLedger implements RetryLedger {

    static final String SCOPE = "leasehold:retry";

    private final RequestRecords records;

    RequestRecordLedger(RequestRecords records) {
        this.records = records;
    }

    @Override
    public Entry begin(String key) {
        // The fingerprint is the key's own: a key always matches itself.
        Claim claim = records.begin(SCOPE, key, CanonicalJson.VERSION + CanonicalJson.sha256("retry:" + key));
        if (claim instanceof Claim.Claimed claimed) {
            return new Entry() {
                @Override
                public State state() {
                    return State.RUN;
                }

                @Override
                public void done() {
                    records.complete(claimed.handle(), new StoredResponse(200, null));
                }

                @Override
                public void failed(String reason) {
                    records.fail(claimed.handle(), reason.length() > 500 ? reason.substring(0, 500) : reason);
                }
            };
        }
        State state = claim instanceof Claim.Replay ? State.DONE : State.RUNNING_ELSEWHERE;
        return new Entry() {
            @Override
            public State state() {
                return state;
            }

            @Override
            public void done() {}

            @Override
            public void failed(String reason) {}
        };
    }
}
