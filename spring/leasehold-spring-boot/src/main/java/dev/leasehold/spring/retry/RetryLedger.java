package dev.leasehold.spring.retry;

/**
 * Remembers which retry keys ran to completion, so a redelivered task is not run twice. Backed by
 * the request records of {@code leasehold-idempotency} when they are configured.
 */
public interface RetryLedger {

    /** What the ledger says about a key. */
    enum State {
        /** Run it through {@link Entry#run}, or give it up with {@link Entry#failed}. */
        RUN,
        /** It completed before: do nothing. */
        DONE,
        /** Another delivery of the key runs right now: try again later. */
        RUNNING_ELSEWHERE
    }

    /** The work of one delivery: calls the method again. */
    @FunctionalInterface
    interface Work {
        void run() throws Exception;
    }

    /** One claim on a key. */
    interface Entry {
        State state();

        /**
         * Runs {@code work} under the claim; for a {@link State#RUN} entry only, once. Returns once the
         * work's effect is committed together with the key's done mark; if the work throws, its
         * effect is rolled back, the key is marked failed (it may run again) and the work's exception
         * is thrown as it was.
         *
         * @throws ClaimLostException if the claim was taken over or could not be renewed before the
         *     commit: the work's effect was rolled back
         */
        void run(Work work) throws Exception;

        /** Gives the claim up without running (the task cannot be called). */
        void failed(String reason);
    }

    /** The claim on a key was lost while its work ran; nothing the work did was committed. */
    final class ClaimLostException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public ClaimLostException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    Entry begin(String key);

    /** No ledger: every delivery runs (at least once, possibly more). */
    RetryLedger NONE = key -> new Entry() {
        @Override
        public State state() {
            return State.RUN;
        }

        @Override
        public void run(Work work) throws Exception {
            work.run();
        }

        @Override
        public void failed(String reason) {}
    };
}
