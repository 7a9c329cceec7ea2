package dev.baton.internal;

/**
 * W3C trace context and optional OpenTelemetry spans. OpenTelemetry is used only when {@code
 * opentelemetry-api} is on the application's classpath (it is an optional dependency); every
 * OpenTelemetry type lives in {@link OtelBridge}, loaded only then.
 */
public final class Tracing {
    private static final boolean OTEL = present("io.opentelemetry.api.GlobalOpenTelemetry");

    private Tracing() {}

    private static boolean present(String cls) {
        try {
            Class.forName(cls, false, Tracing.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** @return whether spans are made (opentelemetry-api is on the classpath) */
    public static boolean enabled() {
        return OTEL;
    }


    /** A started producer span and the W3C trace context that names it. */
    public interface ProducerSpan {
        /** @return the span's traceparent, or null when it has no valid context */
        String traceparent();

        /** @return the span's tracestate, or null when it is empty */
        String tracestate();

        /**
         * @param status the enqueue outcome ({@code queued}, ...), or null
         * @param error the enqueue's failure, or null
         */
        void end(String status, Throwable error);
    }

    /**
     * Starts a PRODUCER span for one task, child of the current context (not made current).
     *
     * @param name span name
     * @param attributes alternating attribute names and values
     * @return the span, or null without OpenTelemetry
     */
    public static ProducerSpan startProducer(String name, String... attributes) {
        return OTEL ? OtelBridge.startProducer(name, attributes) : null;
    }

    /** A started span; {@link #end(Throwable)} closes it. */
    public interface Span {
        /** @param error the attempt's failure, or null */
        void end(Throwable error);
    }

    private static final Span NONE = error -> { };

    /**
     * Starts a consumer span for one attempt, child of the task's traceparent, and makes it
     * current on this thread. The parent keeps the task's tracestate.
     *
     * @param name span name
     * @param traceparent the task's traceparent, or null
     * @param tracestate the task's tracestate, or null
     * @param attributes alternating attribute names and values
     * @return the span (a no-op without OpenTelemetry)
     */
    public static Span startConsumer(String name, String traceparent, String tracestate, String... attributes) {
        return OTEL ? OtelBridge.startConsumer(name, traceparent, tracestate, attributes) : NONE;
    }
}
