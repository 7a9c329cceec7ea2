// Reconnect backoff of the worker's loops (as the C++ worker's): 100 ms, doubling on every
// consecutive failure, capped at 5 s; reset() after a success.
export class Backoff {
  private nextMs: number;
  constructor(private readonly initialMs = 100, private readonly maxMs = 5000) {
    this.nextMs = initialMs;
  }
  /** The delay to wait now; each call doubles the next one. */
  next(): number {
    const current = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, this.maxMs);
    return current;
  }
  reset(): void {
    this.nextMs = this.initialMs;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Retry delay after the n-th failed attempt (docs/protocol.md): exp = min(base * 2^(n-1), max),
 * delay = exp + floor(jitter * exp / 4). Computed by baton_v2_fail from base, max and jitter.
 */
export interface RetryPolicy {
  /** Backoff base in ms (default 2000). */
  baseMs: number;
  /** Backoff cap in ms (default 600000). */
  maxMs: number;
}
export const DEFAULT_RETRY: RetryPolicy = { baseMs: 2000, maxMs: 600000 };
