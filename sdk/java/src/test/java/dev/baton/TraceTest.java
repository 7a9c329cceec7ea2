package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.internal.Tracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** W3C trace context travels producer -> worker; the current OpenTelemetry span is picked up. */
class TraceTest extends Fixtures {
    static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

    @Test
    void theCurrentSpanBecomesTheTasksTraceparent() throws Exception {
        assertTrue(Tracing.enabled(), "opentelemetry-api is on the test classpath");
        String ns = newNamespace();
        LinkedBlockingQueue<Task> got = new LinkedBlockingQueue<>();
        SpanContext ctx = SpanContext.create(TRACE, "00f067aa0ba902b7", TraceFlags.getSampled(), TraceState.getDefault());
        try (BatonClient c = client(); Worker w = worker().build()) {
            Scope scope = Span.wrap(ctx).makeCurrent();
            try {
                c.enqueue(TaskRequest.builder(ns, "traced").build());
            } finally {
                scope.close();
            }
            c.enqueue(TaskRequest.builder(ns, "traced").traceparent("00-" + TRACE + "-1111111111111111-00")
                    .tracestate("k=v").build());
            w.handle(ns, "traced", got::add);
            w.start();
            Task a = got.poll(30, TimeUnit.SECONDS);
            Task b = got.poll(30, TimeUnit.SECONDS);
            java.util.Set<String> seen = java.util.Set.of(a.traceparent().orElseThrow(), b.traceparent().orElseThrow());
            assertEquals(java.util.Set.of("00-" + TRACE + "-00f067aa0ba902b7-01", "00-" + TRACE + "-1111111111111111-00"),
                    seen);
        }
    }
}
