package dev.baton;

import java.util.List;

/**
 * An enqueue with {@link BatonClient.Builder#waitReplicas(int)} whose tasks were written on the
 * primary, but fewer replicas than asked acknowledged them in time (or the {@code WAIT} failed).
 * Its code is {@link ErrorCode#UNAVAILABLE}: the tasks may still run, but are not known to
 * survive a failover. {@link #results()} has their outcomes; sending them again with the same
 * task ids is safe (they come back as {@code duplicate}).
 */
public final class NotDurableException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** The outcomes of the tasks of the call (serialization is not a concern of this SDK). */
    private final transient List<EnqueueResult> results;

    NotDurableException(String message, List<EnqueueResult> results) {
        super(ErrorCode.UNAVAILABLE, message, null);
        this.results = List.copyOf(results);
    }

    /**
     * @return the outcomes of the tasks, in request order (written on the primary)
     */
    public List<EnqueueResult> results() {
        return results;
    }
}
