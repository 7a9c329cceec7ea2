package baton

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context across languages: a task carries {"trace": {"traceparent", "tracestate"}}
// as an extra field (contract/task.schema.json). Enqueue writes the trace context of its ctx
// (an OpenTelemetry span, or the producer span it starts with WithTracerProvider); the worker
// puts the task's trace context into the handler's ctx as the remote parent, and with
// WithTracerProvider starts a consumer span under it.

const instrumentationName = "github.com/baton-dev/baton/sdk/go"

// traceFromContext is the "trace" extra field for the span context of ctx, or nil.
func traceFromContext(ctx context.Context) json.RawMessage {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	tc := map[string]string{"traceparent": formatTraceparent(sc)}
	if ts := sc.TraceState().String(); ts != "" {
		tc["tracestate"] = ts
	}
	b, _ := json.Marshal(tc)
	return b
}

func formatTraceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// parseTraceparent reads a W3C traceparent ("00-<32 hex>-<16 hex>-<2 hex>"); ok is false for
// anything else (a task's trace context is advisory: a bad one is ignored, never an error).
func parseTraceparent(traceparent, tracestate string) (trace.SpanContext, bool) {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	if parts[0] == "00" && len(parts) != 4 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, false
	}
	flags, err := hex.DecodeString(parts[3])
	if err != nil {
		return trace.SpanContext{}, false
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true}
	if tracestate != "" {
		if ts, err := trace.ParseTraceState(tracestate); err == nil {
			cfg.TraceState = ts
		}
	}
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// startProducerSpan starts "baton.enqueue" when the client has a tracer; the returned ctx
// carries it, so the tasks carry its context. end records the outcome and ends the span.
func (c *Client) startProducerSpan(ctx context.Context, requests []Request) (context.Context, func(error)) {
	if c.tracer == nil {
		return ctx, func(error) {}
	}
	name := "baton.enqueue"
	attrs := []attribute.KeyValue{
		attribute.String("messaging.system", "baton"),
		attribute.String("messaging.operation.type", "send"),
		attribute.Int("messaging.batch.message_count", len(requests)),
	}
	if len(requests) == 1 {
		name += " " + requests[0].Type
		attrs = append(attrs, attribute.String("messaging.destination.name", requests[0].Namespace+"/"+requests[0].Type))
	}
	ctx, span := c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// handlerContext puts the task's trace context into ctx and, with a tracer, starts the
// consumer span of the attempt; end records the outcome and ends it.
func handlerContext(ctx context.Context, tracer trace.Tracer, t *Task) (context.Context, func(error)) {
	if tp, ts := t.TraceContext(); tp != "" {
		if sc, ok := parseTraceparent(tp, ts); ok {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	if tracer == nil {
		return ctx, func(error) {}
	}
	ctx, span := tracer.Start(ctx, "baton.process "+t.Type, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "baton"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", t.Namespace+"/"+t.Type),
			attribute.String("messaging.message.id", t.ID),
			attribute.Int("baton.attempt", t.Attempt),
		))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
