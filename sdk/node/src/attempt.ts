// The error boundary every handler runs in, and what a failed attempt records (kind, message,
// stack) in baton:v2:{ns}:errors. Whatever a handler does (throws, rejects, returns a non-Error,
// rejects a promise it forgot to await) it fails its own task and never the process: the last
// case is caught by process_guard through the AsyncLocalStorage scope set here.
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { inspect } from 'node:util';

/** Failure kinds of baton_v2_fail. */
export type FailureKind = 'error' | 'timeout' | 'non_retryable' | 'malformed';

/** The result of one attempt: kind null = success. */
export interface Outcome {
  readonly kind: FailureKind | null;
  readonly message: string;
  readonly stack: string;
}
export const SUCCESS: Outcome = { kind: null, message: '', stack: '' };

/**
 * Throw (or reject with) this from a handler to send the task straight to the dead-letter queue,
 * without retries (failure kind "non_retryable"). Any error with `nonRetryable: true` counts too
 * (useful across realms, e.g. worker threads).
 */
export class NonRetryableError extends Error {
  readonly nonRetryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

function isNonRetryable(e: unknown): boolean {
  return e instanceof NonRetryableError || (typeof e === 'object' && e !== null && (e as { nonRetryable?: unknown }).nonRetryable === true);
}

/** The stack of an error and of its causes ("caused by: ..."), never empty. */
function stackOf(e: unknown, fallbackWhere: string): string {
  const parts: string[] = [];
  let current: unknown = e;
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    const s = current instanceof Error ? (current.stack ?? `${current.name}: ${current.message}`) : inspect(current, { depth: 2 });
    parts.push(depth === 0 ? s : `caused by: ${s}`);
    current = current instanceof Error ? current.cause : undefined;
  }
  const text = parts.join('\n');
  if (e instanceof Error && e.stack) return text;
  // A non-Error was thrown: it has no stack of its own; record where the worker observed it.
  const here = (new Error(fallbackWhere).stack ?? fallbackWhere).split('\n').slice(1).join('\n');
  return `${text}\n${fallbackWhere}:\n${here}`;
}

/** The outcome of a failure `e` (anything thrown or rejected); `how` prefixes the message. */
export function outcomeOfError(e: unknown, how = ''): Outcome {
  const kind: FailureKind = isNonRetryable(e) ? 'non_retryable' : 'error';
  const prefix = how ? `${how}: ` : '';
  const message = e instanceof Error ? `${prefix}${e.name}: ${e.message}`
    : `${prefix}non-Error value thrown: ${inspect(e, { depth: 2, breakLength: Infinity })}`;
  return { kind, message, stack: stackOf(e, 'observed by the baton worker at') };
}

export function timeoutOutcome(executionTimeoutS: number): Outcome {
  const message = `execution_timeout of ${executionTimeoutS}s exceeded`;
  return {
    kind: 'timeout',
    message,
    stack: `TimeoutError: ${message}\nattempt stopped by the worker's deadline timer (the handler's AbortSignal was aborted) at:\n` +
      (new Error().stack ?? '').split('\n').slice(1).join('\n'),
  };
}

/** The running attempt a piece of code belongs to, for errors that escape the handler's promise. */
export interface AttemptScope {
  readonly type: string;
  readonly namespace: string;
  readonly taskId: string;
  /** A failure escaped the handler (unhandled rejection, uncaught exception) while or after it ran. */
  onStrayError(e: unknown, how: string): void;
}

export const attemptScope = new AsyncLocalStorage<AttemptScope>();

/**
 * Runs `fn` in `scope`'s error boundary. Resolves with the outcome, never rejects. `onSync`
 * gets how long the synchronous part of the call held the event loop, in ms.
 */
export function runInBoundary(scope: AttemptScope, fn: () => unknown, onSync: (ms: number) => void): Promise<Outcome> {
  return attemptScope.run(scope, () => {
    const t0 = performance.now();
    let result: unknown;
    try {
      result = fn();
    } catch (e) {
      onSync(performance.now() - t0);
      return Promise.resolve(outcomeOfError(e));
    }
    onSync(performance.now() - t0);
    if (result === null || (typeof result !== 'object' && typeof result !== 'function') ||
        typeof (result as { then?: unknown }).then !== 'function') {
      return Promise.resolve(SUCCESS);
    }
    return Promise.resolve(result as PromiseLike<unknown>).then(() => SUCCESS, (e: unknown) => outcomeOfError(e));
  });
}
