package baton_test

import (
	"context"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The W3C trace context travels with the task: the producer span's context is in the task, the
// handler's ctx has it as the remote parent, and with a tracer provider the worker records a
// consumer span under it.
func TestTraceContextTravelsWithTheTask(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(ctx) }()
	ns := newNS()
	c := newClient(t, baton.WithTracerProvider(tp))

	parentCtx, parent := tp.Tracer("test").Start(ctx, "checkout")
	r, err := c.Enqueue(parentCtx, ns, "traced", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	parent.End()

	handlerSpan := make(chan trace.SpanContext, 1)
	w := newWorker(t, baton.WithTracerProvider(tp))
	_ = w.HandleFunc(ns, "traced", func(ctx context.Context, task *baton.Task) error {
		tp, _ := task.TraceContext()
		if tp == "" {
			t.Error("the task carries no traceparent")
		}
		handlerSpan <- trace.SpanContextFromContext(ctx)
		return nil
	})
	startWorker(t, w)
	var sc trace.SpanContext
	select {
	case sc = <-handlerSpan:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never ran")
	}
	if sc.TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("handler trace %s, producer trace %s", sc.TraceID(), parent.SpanContext().TraceID())
	}
	waitFor(t, 10*time.Second, "the consumer span", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "baton.process traced" {
				return true
			}
		}
		return false
	})
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	producer, consumer := spans["baton.enqueue traced"], spans["baton.process traced"]
	if producer == nil || producer.Parent().SpanID() != parent.SpanContext().SpanID() || producer.SpanKind() != trace.SpanKindProducer {
		t.Fatalf("producer span %+v", producer)
	}
	if consumer.Parent().SpanID() != producer.SpanContext().SpanID() || !consumer.Parent().IsRemote() ||
		consumer.SpanKind() != trace.SpanKindConsumer || consumer.SpanContext().SpanID() != sc.SpanID() {
		t.Fatalf("consumer span parent %v, want the producer span %v", consumer.Parent(), producer.SpanContext())
	}
	_ = r
}

// Without a tracer provider the context is still carried: an explicit Trace option reaches the
// handler's ctx as its remote span context.
func TestExplicitTraceparentReachesTheHandler(t *testing.T) {
	ns := newNS()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, err := newClient(t).Enqueue(context.Background(), ns, "t", []byte(`{}`), baton.Trace(tp, "rojo=00f067aa0ba902b7"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan trace.SpanContext, 1)
	w := newWorker(t)
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		got <- trace.SpanContextFromContext(ctx)
		return nil
	})
	startWorker(t, w)
	select {
	case sc := <-got:
		if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" ||
			!sc.IsSampled() || !sc.IsRemote() || sc.TraceState().Get("rojo") != "00f067aa0ba902b7" {
			t.Fatalf("span context %+v", sc)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the task never ran")
	}
}
