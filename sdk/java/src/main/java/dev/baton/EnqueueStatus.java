package dev.baton;

/** What {@code baton_v2_enqueue} did with one task. */
public enum EnqueueStatus {
    /** In the work stream, runnable now. */
    QUEUED("queued"),
    /** Waiting for its due time (delay or run-at). */
    SCHEDULED("scheduled"),
    /** The id is live or finished within the retention: nothing was written. */
    DUPLICATE("duplicate"),
    /** Another task holds the unique key: nothing was written. */
    UNIQUE_CONFLICT("unique_conflict");

    private final String wire;

    EnqueueStatus(String wire) {
        this.wire = wire;
    }

    /**
     * @return the status as the protocol spells it
     */
    public String wire() {
        return wire;
    }

    static EnqueueStatus fromWire(String s) {
        for (EnqueueStatus v : values()) {
            if (v.wire.equals(s)) {
                return v;
            }
        }
        throw new BatonException(ErrorCode.INTERNAL, "unexpected enqueue status " + s, null);
    }
}
