// W3C trace context across languages, and OpenTelemetry spans when the application has
// @opentelemetry/api installed (an optional peer dependency: nothing here needs it).
//
// Producer: each task enqueued without a trace of its own gets a PRODUCER span "send
// <namespace>/<task_type>" (child of the active span, ended when the enqueue call returns) and
// carries its context as trace.traceparent (+ tracestate). Worker: each attempt runs inside a
// CONSUMER span "process <namespace>/<task_type>" whose parent is the task's traceparent; the
// handler's own spans nest under it. Names and attributes as the Python SDK (OpenTelemetry
// messaging conventions). Without the package (or with tracing off), only the field travels.

/** The subset of @opentelemetry/api this module uses (kept local so its types are optional). */
interface SpanContext { traceId: string; spanId: string; traceFlags: number; isRemote?: boolean; traceState?: { serialize(): string } }
interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  recordException(e: unknown): void;
  setStatus(s: { code: number; message?: string }): unknown;
  end(): void;
  isRecording(): boolean;
}
interface OtelApi {
  trace: {
    getActiveSpan(): Span | undefined;
    getTracer(name: string, version?: string): { startSpan(name: string, options: unknown, context?: unknown): Span };
    setSpanContext(context: unknown, sc: SpanContext): unknown;
    setSpan(context: unknown, span: Span): unknown;
    isSpanContextValid(sc: SpanContext): boolean;
  };
  context: { active(): unknown; with<T>(ctx: unknown, fn: () => T): T };
  ROOT_CONTEXT: unknown;
  createTraceState?(raw: string): { serialize(): string };
  SpanKind: { CONSUMER: number; PRODUCER: number };
  SpanStatusCode: { ERROR: number; OK: number };
}

let loaded: Promise<OtelApi | null> | undefined;

/** @opentelemetry/api when installed, else null (looked up once). */
export function loadOtel(): Promise<OtelApi | null> {
  loaded ??= import('@opentelemetry/api').then(
    (m) => {
      // ESM: the namespace has every export (its `default` lacks SpanKind); CJS interop: either.
      const ns = m as unknown as OtelApi & { default?: OtelApi };
      return ns.SpanKind !== undefined ? ns : (ns.default ?? null);
    },
    () => null,
  );
  return loaded;
}

const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The parts of a W3C traceparent ("00-<trace id>-<span id>-<flags>"), or undefined if invalid. */
export function parseTraceparent(value: unknown): { traceId: string; spanId: string; traceFlags: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT_RE.exec(value.trim());
  if (m === null || m[1] === 'ff') return undefined;
  const traceId = m[2] as string;
  const spanId = m[3] as string;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  if (m[1] === '00' && m[5] !== undefined) return undefined;
  return { traceId, spanId, traceFlags: parseInt(m[4] as string, 16) };
}

export function formatTraceparent(sc: { traceId: string; spanId: string; traceFlags: number }): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The PRODUCER spans of one enqueue call (one per task), ended together after the call. */
export class ProducerSpans {
  private readonly spans: Span[] = [];

  constructor(private readonly api: OtelApi | null) {}

  /** Starts the task's span; returns the trace field to send (undefined: none). */
  start(namespace: string, taskType: string, taskId: string): { traceparent: string; tracestate?: string } | undefined {
    const api = this.api;
    if (api === null) return undefined;
    const span = api.trace.getTracer('@baton/client').startSpan(`send ${namespace}/${taskType}`, {
      kind: api.SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'baton', 'messaging.operation.type': 'send',
        'messaging.destination.name': `${namespace}/${taskType}`, 'messaging.message.id': taskId,
      },
    }, api.context.active());
    // No tracer provider (the API alone): nothing records; pass the active span on, if any.
    const carried = span.isRecording() ? span : api.trace.getActiveSpan();
    if (span.isRecording()) this.spans.push(span);
    if (carried === undefined) return undefined;
    const sc = carried.spanContext();
    if (!api.trace.isSpanContextValid(sc)) return undefined;
    const tracestate = sc.traceState?.serialize();
    return tracestate ? { traceparent: formatTraceparent(sc), tracestate } : { traceparent: formatTraceparent(sc) };
  }

  end(error?: unknown): void {
    const api = this.api;
    for (const span of this.spans.splice(0)) {
      if (error !== undefined && api !== null) {
        span.recordException(error);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error) });
      }
      span.end();
    }
  }
}

/** A started consumer span of one attempt, and how to run code inside it and end it. */
export interface AttemptSpan {
  run<T>(fn: () => T): T;
  end(error?: unknown): void;
}

/** A CONSUMER span for an attempt, child of `trace.traceparent` when valid; undefined without OTel. */
export function startAttemptSpan(api: OtelApi | null, name: string, trace: { traceparent?: unknown; tracestate?: unknown } | undefined,
  attributes: Record<string, string | number>): AttemptSpan | undefined {
  if (api === null) return undefined;
  const parent = parseTraceparent(trace?.traceparent);
  const traceState = typeof trace?.tracestate === 'string' && trace.tracestate !== '' && api.createTraceState
    ? api.createTraceState(trace.tracestate) : undefined;
  const base = parent === undefined ? api.ROOT_CONTEXT
    : api.trace.setSpanContext(api.ROOT_CONTEXT, { ...parent, isRemote: true, ...(traceState ? { traceState } : {}) });
  const span = api.trace.getTracer('@baton/client').startSpan(name, { kind: api.SpanKind.CONSUMER, attributes }, base);
  // No tracer provider registered (the API alone is installed): nothing records, skip the cost.
  if (!span.isRecording()) return undefined;
  const ctx = api.trace.setSpan(base, span);
  return {
    run: (fn) => api.context.with(ctx, fn),
    end: (error) => {
      if (error !== undefined) {
        span.recordException(error);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error) });
      }
      span.end();
    },
  };
}
