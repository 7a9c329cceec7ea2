package dev.baton;

import java.util.List;

/**
 * An enqueue with {@link BatonClient.Builder#waitReplicas(int)} whose tasks were written on the
 * primary, but fewer replicas than asked acknowledged them in time (or the {@code WAIT} failed).
 * Its code is {@link ErrorCode#UNAVAILABLE}: the tasks may still run, but are not known to
 * survive a failover. {@link #results()} has their outcomes and {@link #notDurableTaskIds()} the
 * tasks concerned; sending them again with the same task ids is safe (they come back as {@code
 * duplicate}).
 */
public final class NotDurableException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** The outcomes of the tasks of the call (serialization is not a concern of this SDK). */
    private final transient List<EnqueueResult> results;
    /** The ids of the tasks whose call's WAIT fell short. */
    private final transient List<String> notDurableTaskIds;

    /** Every task of the call fell short. */
    NotDurableException(String message, List<EnqueueResult> results) {
        this(message, results, results.stream().map(EnqueueResult::taskId).toList());
    }

    NotDurableException(String message, List<EnqueueResult> results, List<String> notDurableTaskIds) {
        super(ErrorCode.UNAVAILABLE, message, null);
        this.results = List.copyOf(results);
        this.notDurableTaskIds = List.copyOf(notDurableTaskIds);
    }

    /**
     * @return the outcomes of the tasks, in request order (written on the primary)
     */
    public List<EnqueueResult> results() {
        return results;
    }

    /**
     * @return the ids of the tasks not known to be durable, in request order: every task of a
     *     single {@code enqueue}; for {@code enqueueAll}, those of its calls whose {@code WAIT}
     *     fell short (the others were acknowledged by enough replicas)
     */
    public List<String> notDurableTaskIds() {
        return notDurableTaskIds;
    }
}
