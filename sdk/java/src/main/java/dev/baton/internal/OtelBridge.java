package dev.baton.internal;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.HashMap;
import java.util.Map;

/**
 * The OpenTelemetry calls of {@link Tracing}; loaded only when opentelemetry-api is present. The
 * task's {@code trace} field is read and written by the W3C propagator of the API, so
 * {@code tracestate} travels with {@code traceparent} both ways.
 */
final class OtelBridge {
    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

    private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private OtelBridge() {}


    private static Tracer tracer() {
        return GlobalOpenTelemetry.getTracer("dev.baton");
    }

    static Tracing.ProducerSpan startProducer(String name, String... attributes) {
        var b = tracer().spanBuilder(name).setSpanKind(SpanKind.PRODUCER).setParent(Context.current());
        for (int i = 0; i + 1 < attributes.length; i += 2) {
            b.setAttribute(attributes[i], attributes[i + 1]);
        }
        Span span = b.startSpan();
        Map<String, String> carrier = new HashMap<>();
        // writes nothing when the span context is invalid (no SDK installed and no current span)
        W3C.inject(Context.current().with(span), carrier, Map::put);
        String traceparent = carrier.get("traceparent");
        String tracestate = carrier.get("tracestate");
        return new Tracing.ProducerSpan() {
            @Override
            public String traceparent() {
                return traceparent;
            }

            @Override
            public String tracestate() {
                return tracestate;
            }

            @Override
            public void end(String status, Throwable error) {
                if (status != null) {
                    span.setAttribute("baton.enqueue_status", status);
                }
                if (error != null) {
                    span.recordException(error);
                    span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
                }
                span.end();
            }
        };
    }

    static Tracing.Span startConsumer(String name, String traceparent, String tracestate, String... attributes) {
        var b = tracer().spanBuilder(name).setSpanKind(SpanKind.CONSUMER).setParent(parent(traceparent, tracestate));
        for (int i = 0; i + 1 < attributes.length; i += 2) {
            b.setAttribute(attributes[i], attributes[i + 1]);
        }
        Span span = b.startSpan();
        Scope scope = span.makeCurrent();
        return error -> {
            if (error != null) {
                span.recordException(error);
                span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
            }
            scope.close();
            span.end();
        };
    }

    /**
     * The remote parent of a consumer span: the task's traceparent with its tracestate, by the
     * W3C rules (an invalid traceparent is no parent; an invalid tracestate is dropped).
     */
    static Context parent(String traceparent, String tracestate) {
        if (traceparent == null) {
            return Context.root();
        }
        Map<String, String> carrier = new HashMap<>();
        carrier.put("traceparent", traceparent);
        if (tracestate != null) {
            carrier.put("tracestate", tracestate);
        }
        return W3C.extract(Context.root(), carrier, GETTER);
    }
}
