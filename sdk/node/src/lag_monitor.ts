// Reports handlers that block the event loop (seed 3.3: CPU-bound work or synchronous I/O in a
// handler freezes every other handler and the HTTP server sharing the process).
//
// Two measurements:
// - exact: the synchronous part of each handler call is timed (runInBoundary's onSync); over the
//   threshold it is a warning naming the task type and id;
// - any blocking, also after an await: a timer expects to fire every intervalMs; when it fires
//   late by more than the threshold, the loop was blocked, and the warning names the task types
//   that were running then (the suspects).
// Both count in stats (eventLoop.maxLagMs, per type blockedCount / maxBlockedMs).
import { performance } from 'node:perf_hooks';

export interface LagOptions {
  /** A block longer than this (ms) is reported (default 200). */
  thresholdMs?: number;
  /** How often the loop is probed (ms, default 50). */
  intervalMs?: number;
}

export interface BlockReport {
  /** "handler" (exact: the synchronous part of a handler) or "loop" (a late timer). */
  readonly source: 'handler' | 'loop';
  readonly blockedMs: number;
  /** The task types running at the time, with how many attempts of each. */
  readonly types: ReadonlyArray<{ namespace: string; type: string; running: number }>;
  readonly taskId?: string;
}

export class LagMonitor {
  readonly thresholdMs: number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private last = 0;
  maxLagMs = 0;
  blockedCount = 0;

  constructor(options: LagOptions,
    private readonly running: () => BlockReport['types'],
    private readonly report: (r: BlockReport) => void) {
    this.thresholdMs = options.thresholdMs ?? 200;
    this.intervalMs = options.intervalMs ?? 50;
  }

  start(): void {
    this.last = performance.now();
    this.timer = setInterval(() => this.probe(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The synchronous part of a handler took `ms`. */
  handlerSync(namespace: string, type: string, taskId: string, ms: number): void {
    if (ms < this.thresholdMs) return;
    this.blockedCount++;
    this.maxLagMs = Math.max(this.maxLagMs, ms);
    this.report({ source: 'handler', blockedMs: ms, types: [{ namespace, type, running: 1 }], taskId });
    // The probe will see the same stall: do not report it twice.
    this.last = performance.now();
  }

  private probe(): void {
    const now = performance.now();
    const lag = now - this.last - this.intervalMs;
    this.last = now;
    if (lag > this.maxLagMs) this.maxLagMs = lag;
    if (lag < this.thresholdMs) return;
    this.blockedCount++;
    this.report({ source: 'loop', blockedMs: lag, types: this.running() });
  }
}
