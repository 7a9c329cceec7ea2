package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The spans the SDK makes, recorded by the OpenTelemetry SDK's in-memory exporter: a PRODUCER span
 * per enqueued task whose context (traceparent and tracestate) is the task's trace field, and a
 * CONSUMER span per attempt whose parent is that context, tracestate included.
 */
class OtelSpansTest extends Fixtures {
    static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
    static final InMemorySpanExporter SPANS = InMemorySpanExporter.create();
    /** The parent's tracestate on the wire (TraceState.Builder.put adds a key in front). */
    static final String STATE = "other=x1,vendor=abc";
    static OpenTelemetrySdk sdk;

    @BeforeAll
    static void installSdk() {
        GlobalOpenTelemetry.resetForTest();
        sdk = OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .addSpanProcessor(SimpleSpanProcessor.create(SPANS)).build()).build();
        GlobalOpenTelemetry.set(sdk);
    }

    @AfterAll
    static void removeSdk() {
        GlobalOpenTelemetry.resetForTest(); // the other test classes run with the no-op API
        sdk.close();
    }

    @BeforeEach
    void clear() {
        SPANS.reset();
    }

    /** A remote parent with a tracestate, made current. */
    static Scope remoteParent(String spanId) {
        SpanContext parent = SpanContext.createFromRemoteParent(TRACE, spanId, TraceFlags.getSampled(),
                TraceState.builder().put("vendor", "abc").put("other", "x1").build());
        return Span.wrap(parent).makeCurrent();
    }

    static SpanData one(SpanKind kind, String taskId) {
        List<SpanData> found = SPANS.getFinishedSpanItems().stream()
                .filter(s -> s.getKind() == kind)
                .filter(s -> taskId.equals(s.getAttributes().get(io.opentelemetry.api.common.AttributeKey
                        .stringKey("baton.task_id"))))
                .toList();
        assertEquals(1, found.size(), kind + " spans of " + taskId + ": " + SPANS.getFinishedSpanItems());
        return found.get(0);
    }

    static void waitForSpan(SpanKind kind, String taskId) throws InterruptedException {
        waitFor(Duration.ofSeconds(30), kind + " span of " + taskId, () -> SPANS.getFinishedSpanItems().stream()
                .anyMatch(s -> s.getKind() == kind && taskId.equals(s.getAttributes().get(
                        io.opentelemetry.api.common.AttributeKey.stringKey("baton.task_id")))));
    }

    static String traceparentOf(SpanData s) {
        return "00-" + s.getTraceId() + "-" + s.getSpanId() + "-" + s.getSpanContext().getTraceFlags().asHex();
    }

    @Test
    void producerSpanIsTheTasksTraceAndParentOfTheConsumerSpan() throws Exception {
        String ns = newNamespace();
        LinkedBlockingQueue<Task> got = new LinkedBlockingQueue<>();
        Map<String, SpanContext> inHandler = new ConcurrentHashMap<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            EnqueueResult r;
            Scope scope = remoteParent("00f067aa0ba902b7");
            try {
                r = c.enqueue(TaskRequest.builder(ns, "traced").payloadJson("{\"n\":1}").build());
            } finally {
                scope.close();
            }
            SpanData producer = one(SpanKind.PRODUCER, r.taskId());
            assertEquals("baton.enqueue traced", producer.getName());
            assertEquals(TRACE, producer.getTraceId());
            assertEquals("00f067aa0ba902b7", producer.getParentSpanId());
            assertEquals("queued", producer.getAttributes().get(
                    io.opentelemetry.api.common.AttributeKey.stringKey("baton.enqueue_status")));
            assertEquals(ns, producer.getAttributes().get(
                    io.opentelemetry.api.common.AttributeKey.stringKey("baton.namespace")));

            w.handle(ns, "traced", t -> {
                inHandler.put(t.taskId(), Span.current().getSpanContext());
                got.add(t);
            });
            w.start();
            Task t = got.poll(30, TimeUnit.SECONDS);
            assertEquals(traceparentOf(producer), t.traceparent().orElseThrow());
            assertEquals(STATE, t.tracestate().orElseThrow());

            waitForSpan(SpanKind.CONSUMER, r.taskId());
            SpanData consumer = one(SpanKind.CONSUMER, r.taskId());
            assertEquals("baton.process traced", consumer.getName());
            assertEquals(TRACE, consumer.getTraceId());
            assertEquals(producer.getSpanId(), consumer.getParentSpanId());
            assertTrue(consumer.getParentSpanContext().isRemote());
            assertEquals("abc", consumer.getParentSpanContext().getTraceState().get("vendor"));
            assertEquals("x1", consumer.getSpanContext().getTraceState().get("other"), "tracestate kept by the child");
            assertEquals(consumer.getSpanContext(), inHandler.get(r.taskId()), "the handler runs in the consumer span");
        }
    }

    @Test
    void enqueueAllAndAsyncSpansAreChildrenOfTheCallersContext() throws Exception {
        String ns = newNamespace();
        Map<String, Task> got = new ConcurrentHashMap<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            w.handle(ns, "a", t -> got.put(t.taskId(), t)).handle(ns, "b", t -> got.put(t.taskId(), t));
            w.start();
            List<EnqueueResult> all;
            EnqueueResult async;
            Scope scope = remoteParent("1111111111111111");
            try {
                all = c.enqueueAll(List.of(TaskRequest.builder(ns, "a").build(), TaskRequest.builder(ns, "a").build(),
                        TaskRequest.builder(ns, "b").build()));
                // the future runs on another thread: the span is still the caller's context's child
                async = c.enqueueAsync(TaskRequest.builder(ns, "a").build()).get(30, TimeUnit.SECONDS);
            } finally {
                scope.close();
            }
            for (EnqueueResult r : List.of(all.get(0), all.get(1), all.get(2), async)) {
                SpanData p = one(SpanKind.PRODUCER, r.taskId());
                assertEquals(TRACE, p.getTraceId());
                assertEquals("1111111111111111", p.getParentSpanId());
                waitFor(Duration.ofSeconds(30), "delivery", () -> got.containsKey(r.taskId()));
                assertEquals(traceparentOf(p), got.get(r.taskId()).traceparent().orElseThrow());
                assertEquals(STATE, got.get(r.taskId()).tracestate().orElseThrow());
            }
            // outside any span: a root producer span, still carried
            EnqueueResult root = c.enqueue(TaskRequest.builder(ns, "a").build());
            SpanData p = one(SpanKind.PRODUCER, root.taskId());
            assertFalse(p.getParentSpanContext().isValid());
            waitFor(Duration.ofSeconds(30), "delivery", () -> got.containsKey(root.taskId()));
            assertEquals(traceparentOf(p), got.get(root.taskId()).traceparent().orElseThrow());
            assertTrue(got.get(root.taskId()).tracestate().isEmpty());
        }
    }

    @Test
    void aTaskWithItsOwnTraceKeepsItAndGetsNoProducerSpan() throws Exception {
        String ns = newNamespace();
        LinkedBlockingQueue<Task> got = new LinkedBlockingQueue<>();
        String given = "00-" + TRACE + "-2222222222222222-01";
        try (BatonClient c = client(); Worker w = worker().build()) {
            EnqueueResult r = c.enqueue(TaskRequest.builder(ns, "own").traceparent(given).tracestate("k=v").build());
            assertTrue(SPANS.getFinishedSpanItems().isEmpty(), SPANS.getFinishedSpanItems().toString());
            w.handle(ns, "own", t -> {
                got.add(t);
                throw new NonRetryableException("boom");
            });
            w.start();
            Task t = got.poll(30, TimeUnit.SECONDS);
            assertEquals(given, t.traceparent().orElseThrow());
            assertEquals("k=v", t.tracestate().orElseThrow());
            waitForSpan(SpanKind.CONSUMER, r.taskId());
            SpanData consumer = one(SpanKind.CONSUMER, r.taskId());
            assertEquals("2222222222222222", consumer.getParentSpanId());
            assertEquals("v", consumer.getParentSpanContext().getTraceState().get("k"));
            assertEquals(StatusCode.ERROR, consumer.getStatus().getStatusCode());
            assertEquals(1, consumer.getEvents().stream().filter(e -> e.getName().equals("exception")).count());
        }
    }
}
