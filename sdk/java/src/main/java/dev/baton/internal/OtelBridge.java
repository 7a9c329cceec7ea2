package dev.baton.internal;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;

/** The OpenTelemetry calls of {@link Tracing}; loaded only when opentelemetry-api is present. */
final class OtelBridge {
    private OtelBridge() {}

    static String currentTraceparent() {
        SpanContext c = Span.current().getSpanContext();
        if (!c.isValid()) {
            return null;
        }
        return "00-" + c.getTraceId() + "-" + c.getSpanId() + "-" + c.getTraceFlags().asHex();
    }

    static Tracing.Span startConsumer(String name, String traceparent, String... attributes) {
        Tracer tracer = GlobalOpenTelemetry.getTracer("dev.baton");
        Context parent = Context.root();
        SpanContext remote = parse(traceparent);
        if (remote != null) {
            parent = parent.with(Span.wrap(remote));
        }
        var b = tracer.spanBuilder(name).setSpanKind(SpanKind.CONSUMER).setParent(parent);
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

    /** Parses {@code 00-<32 hex>-<16 hex>-<2 hex>}; anything else is no parent. */
    static SpanContext parse(String tp) {
        if (tp == null || tp.length() != 55 || !tp.startsWith("00-")) {
            return null;
        }
        String[] p = tp.split("-");
        if (p.length != 4) {
            return null;
        }
        SpanContext c = SpanContext.createFromRemoteParent(p[1], p[2],
                TraceFlags.fromHex(p[3], 0), TraceState.getDefault());
        return c.isValid() ? c : null;
    }
}
