package dev.leasehold.spi;

import dev.leasehold.LeaseStoreException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Thrown by {@link LeaseStore#renewAll} when part of a batch failed and the rest has its answers,
 * such as a batch spread over several servers one of which failed: each renewal has either its
 * answer (as {@code renewAll} would have returned it) or its own failure, in the batch's order. The
 * engine gives each lease its own outcome from it (proved by {@code
 * RenewalBatchesTest.aPartlyFailedBatchFailsOnlyTheLeasesWhoseRenewalFailed}).
 */
public final class PartialRenewalException extends LeaseStoreException {
    private static final long serialVersionUID = 1L;

    private final transient List<Optional<Grant>> answers;
    private final transient List<RuntimeException> failures;

    /**
     * A batch of {@code answers.size()} renewals, of which those with a {@code null} answer failed
     * with the failure at the same index (and only those have one).
     *
     * @throws IllegalArgumentException if the lists differ in size, or an index has both an answer
     *     and a failure or neither
     */
    public PartialRenewalException(List<Optional<Grant>> answers, List<? extends RuntimeException> failures) {
        super("renew", answers.size() + " leases", firstFailure(failures));
        if (answers.size() != failures.size()) {
            throw new IllegalArgumentException(answers.size() + " answers but " + failures.size() + " failures");
        }
        for (int i = 0; i < answers.size(); i++) {
            if ((answers.get(i) == null) == (failures.get(i) == null)) {
                throw new IllegalArgumentException("renewal " + i + " needs either an answer or a failure");
            }
        }
        this.answers = Collections.unmodifiableList(new ArrayList<>(answers));
        this.failures = Collections.unmodifiableList(new ArrayList<>(failures));
        failures.stream()
                .filter(Objects::nonNull)
                .distinct()
                .filter(failure -> failure != getCause())
                .forEach(this::addSuppressed);
    }

    private static RuntimeException firstFailure(List<? extends RuntimeException> failures) {
        return failures.stream().filter(Objects::nonNull).findFirst().orElse(null);
    }

    /** How many renewals the batch had. */
    public int size() {
        return answers == null ? 0 : answers.size();
    }

    /** The answer to renewal {@code i}, or {@code null} where it failed. */
    public Optional<Grant> answer(int i) {
        return answers.get(i);
    }

    /** Why renewal {@code i} failed, or {@code null} where it has an answer. */
    public RuntimeException failure(int i) {
        return failures.get(i);
    }
}
