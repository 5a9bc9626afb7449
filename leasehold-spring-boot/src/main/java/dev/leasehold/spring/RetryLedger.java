package dev.leasehold.spring;

/**
 * Remembers which retry keys ran to completion, so a redelivered task is not run twice. Backed by
 * the request records of {@code leasehold-idempotency} when they are configured.
 */
interface RetryLedger {

    /** What the ledger says about a key. */
    enum State {
        /** Run it; then call {@link Entry#done()} or {@link Entry#failed}. */
        RUN,
        /** It completed before: do nothing. */
        DONE,
        /** Another delivery of the key runs right now: try again later. */
        RUNNING_ELSEWHERE
    }

    /** One claim on a key. */
    interface Entry {
        State state();

        void done();

        void failed(String reason);
    }

    Entry begin(String key);

    /** No ledger: every delivery runs (at least once, possibly more). */
    RetryLedger NONE = key -> new Entry() {
        @Override
        public State state() {
            return State.RUN;
        }

        @Override
        public void done() {}

        @Override
        public void failed(String reason) {}
    };
}
