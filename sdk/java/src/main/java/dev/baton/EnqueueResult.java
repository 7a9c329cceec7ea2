package dev.baton;

/**
 * The outcome of one enqueued task.
 *
 * @param taskId the task's id (the given one or the generated UUIDv7)
 * @param status what happened
 * @param detail the protocol's detail: the stream entry id (queued), the due time in Unix ms
 *     (scheduled), the existing state (duplicate), or the id holding the unique key
 */
public record EnqueueResult(String taskId, EnqueueStatus status, String detail) {

    /**
     * @return whether a new task was written (queued or scheduled)
     */
    public boolean created() {
        return status == EnqueueStatus.QUEUED || status == EnqueueStatus.SCHEDULED;
    }
}
