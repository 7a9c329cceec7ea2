package dev.baton;

/**
 * Every error of the SDK: a contract {@link ErrorCode}, and for {@link ErrorCode#INVALID_ARGUMENT}
 * the offending field. The message of an invalid argument starts with {@code "<field>: "} followed
 * by the rule, e.g. {@code max_retry: must be an integer 0..25 (got 99)}.
 */
public class BatonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The contract code. */
    private final ErrorCode code;
    /** The offending field of an invalid argument, or null. */
    private final String field;

    /**
     * An error with a code and a message.
     *
     * @param code the contract code
     * @param message what happened
     * @param cause the underlying exception, or null
     */
    public BatonException(ErrorCode code, String message, Throwable cause) {
        this(code, null, message, cause);
    }

    private BatonException(ErrorCode code, String field, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.field = field;
    }

    /**
     * An {@code invalid_argument} error naming the field and the rule it breaks.
     *
     * @param field the field, e.g. {@code max_retry} or {@code trace.traceparent}
     * @param rule the rule, e.g. {@code must be an integer 0..25 (got 99)}
     * @return the exception
     */
    public static BatonException invalid(String field, String rule) {
        return new BatonException(ErrorCode.INVALID_ARGUMENT, field, field + ": " + rule, null);
    }

    /**
     * @return the contract code
     */
    public ErrorCode code() {
        return code;
    }

    /**
     * @return the offending field of an {@code invalid_argument} error, else null
     */
    public String field() {
        return field;
    }

    /**
     * @return whether the same call may succeed later (the code's contract flag)
     */
    public boolean retryable() {
        return code.retryable();
    }

    /**
     * Maps a Redis error reply to a Baton error: {@code BATON_*} replies by their first word,
     * Redis' own ones (OOM, READONLY, ...) by the table of contract/errors.json.
     *
     * @param reply the error reply text
     * @param cause the client's exception
     * @return the mapped exception
     */
    public static BatonException fromRedisError(String reply, Throwable cause) {
        String text = reply == null ? "" : reply;
        for (ErrorCode c : ErrorCode.values()) {
            String p = c.luaPrefix();
            if (p != null && text.startsWith(p + " ")) {
                String rest = text.substring(p.length() + 1);
                if (c == ErrorCode.INVALID_ARGUMENT) {
                    int colon = rest.indexOf(": ");
                    String field = colon > 0 ? rest.substring(0, colon) : null;
                    return new BatonException(c, field, rest, cause);
                }
                return new BatonException(c, rest, cause);
            }
        }
        for (String[] row : ErrorCode.REDIS_ERRORS) {
            // by whole words: BUSYGROUP is not BUSY
            if (text.equals(row[0]) || text.startsWith(row[0] + " ")) {
                ErrorCode c = ErrorCode.valueOf(row[1].toUpperCase(java.util.Locale.ROOT));
                return new BatonException(c, text + " (" + row[2] + ")", cause);
            }
        }
        return new BatonException(ErrorCode.INTERNAL, "unexpected Redis error: " + text, cause);
    }
}
