package dev.baton;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * A failed attempt as {@code baton_v2_fail} records it.
 *
 * @param kind error, timeout, non_retryable or malformed
 * @param error one-line message
 * @param stack the Java stack trace (frames as {@code \tat pkg.Class.method(File.java:N)})
 */
record Failure(String kind, String error, String stack) {
    /** Stacks longer than this are cut (the errors hash keeps every attempt). */
    static final int MAX_STACK_CHARS = 16384;

    static Failure of(Throwable t) {
        String kind = t instanceof NonRetryableException ? "non_retryable" : "error";
        return new Failure(kind, String.valueOf(t), stackOf(t));
    }

    static String stackOf(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return cut(w.toString());
    }

    /** The frames a thread is in now (where a timed-out handler was stuck). */
    static String stackOf(Thread thread, String header) {
        StringBuilder b = new StringBuilder(header).append('\n');
        if (thread != null) {
            for (StackTraceElement e : thread.getStackTrace()) {
                b.append("\tat ").append(e).append('\n');
            }
        }
        return cut(b.toString());
    }

    private static String cut(String s) {
        return s.length() <= MAX_STACK_CHARS ? s : s.substring(0, MAX_STACK_CHARS) + "\n\t... (cut)";
    }
}
