package dev.baton;

/**
 * Thrown by a handler to fail the task at once, without retries: the task goes to the dead-letter
 * queue with kind {@code non_retryable}. Wrapping another exception keeps its stack trace.
 */
public class NonRetryableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message why the task can never succeed
     */
    public NonRetryableException(String message) {
        super(message);
    }

    /**
     * @param message why the task can never succeed
     * @param cause the underlying exception
     */
    public NonRetryableException(String message, Throwable cause) {
        super(message, cause);
    }
}
