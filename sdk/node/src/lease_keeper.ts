// Heartbeats: every lease/3 of its type, the leases of the attempts still running are moved with
// baton_v2_extend (one call per type, on the worker's control connection). A SID missing from the
// reply was taken back (the lease had expired and someone reclaimed it): that attempt is aborted.
// After a failed beat the next one comes sooner (100 ms, doubling, never later than the period):
// one missed beat must not cost a lease.
import { extend as extendCall } from './generated/calls.js';
import type { RedisLink } from './redis_link.js';
import type { TypeRunner } from './type_runner.js';
import { Backoff } from './backoff.js';

export class LeaseKeeper {
  private readonly timers = new Map<TypeRunner, NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly link: RedisLink, private readonly runners: readonly TypeRunner[],
    private readonly warn: (message: string) => void) {}

  start(): void {
    for (const runner of this.runners) this.add(runner);
  }

  /** Starts heartbeating `runner` too (a partition the worker began serving while running). */
  add(runner: TypeRunner): void {
    const backoff = new Backoff(100, Math.max(1, Math.floor(runner.settings.leaseMs / 3)));
    this.schedule(runner, this.period(runner), backoff);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private period(runner: TypeRunner): number {
    return Math.max(1, Math.floor(runner.settings.leaseMs / 3));
  }

  private schedule(runner: TypeRunner, ms: number, backoff: Backoff): void {
    if (this.stopped) return;
    const t = setTimeout(() => void this.beat(runner, backoff), ms);
    t.unref();
    this.timers.set(runner, t);
  }

  /** One heartbeat of one type; public for tests. Returns false when it failed. */
  async beat(runner: TypeRunner, backoff = new Backoff()): Promise<boolean> {
    const items = runner.heartbeatItems();
    let ok = true;
    if (items.length > 0) {
      const s = runner.settings;
      try {
        const held = await this.link.fcall(extendCall(s.storageNs, s.type, { group: s.group, consumer: s.consumer, leaseMs: s.leaseMs }, items), 'extend');
        if (Array.isArray(held)) runner.onExtendReply(items, held.map(String));
        else this.warn(`${s.storageNs}/${s.type} baton_v2_extend: unexpected reply`);
      } catch (e) {
        // Says nothing about the leases (Redis down, library reloading): try again soon.
        ok = false;
        this.warn(`${s.storageNs}/${s.type} heartbeat: ${(e as Error).message}`);
      }
    }
    if (ok) backoff.reset();
    this.schedule(runner, ok ? this.period(runner) : Math.min(backoff.next(), this.period(runner)), backoff);
    return ok;
  }
}
