package dev.baton;

/**
 * Runs one task. Return normally for success; throw to fail the attempt (it is retried with
 * backoff while retries are left, with the exception and its stack trace recorded), or throw
 * {@link NonRetryableException} to dead-letter it at once. When the task's execution_timeout
 * passes, the attempt is failed as a timeout and the handler's thread is interrupted: code that
 * ignores interrupts keeps running, but its result is ignored.
 */
@FunctionalInterface
public interface TaskHandler {
    /**
     * @param task the delivered task
     * @throws Exception to fail the attempt
     */
    void handle(Task task) throws Exception;
}
