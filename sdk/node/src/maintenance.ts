// A Worker's optional in-process maintenance (WorkerOptions.maintenance, off by default: batond
// does the same for every namespace): for the worker's own types it promotes due delayed and
// retrying tasks (baton_v2_promote) and takes back tasks whose lease ended (baton_v2_reclaim,
// which only ever takes a task past its own lease deadline, whoever calls it). It sleeps until
// the earliest due time or lease deadline the functions report (at most 1 s), and wakes early
// when this worker schedules an earlier retry. It never polls faster.
import { promote as promoteCall, reclaim as reclaimCall } from './generated/calls.js';
import { commandOf } from './function_call.js';
import type { RedisLink } from './redis_link.js';
import { Backoff, type RetryPolicy } from './backoff.js';
import { randomInt } from 'node:crypto';

const PROMOTE_LIMIT = 1000;
const RECLAIM_COUNT = 100;
const MAX_SLEEP_MS = 1000;
const MIN_SLEEP_MS = 10;

export interface MaintenanceTarget {
  /** The storage namespace (a namespace, or a partition "NS:p" of one). */
  readonly ns: string;
  readonly type: string;
  /** Backoff for the tasks it reclaims. */
  readonly retry: RetryPolicy;
}

interface Plan {
  promoteAt: number;
  reclaimAt: number;
}

export class Maintenance {
  private readonly plans: Plan[];
  private readonly targets: MaintenanceTarget[];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private serverOffsetMs: number | undefined; // server Unix ms - local Date.now()
  private readonly backoff = new Backoff();

  constructor(private readonly link: RedisLink, targets: readonly MaintenanceTarget[],
    private readonly reaper: string, private readonly warn: (message: string) => void) {
    const now = Date.now();
    this.targets = [...targets];
    this.plans = targets.map(() => ({ promoteAt: now, reclaimAt: now }));
  }

  /** Covers `target` too (a partition the worker began serving while running), from now on. */
  add(target: MaintenanceTarget): void {
    this.targets.push(target);
    this.plans.push({ promoteAt: Date.now(), reclaimAt: Date.now() });
    this.rearm();
  }

  start(): void {
    this.arm(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** A retry of (ns, type) is due at dueMs (Redis clock): promote it then, if earlier than planned. */
  retryScheduled(ns: string, type: string, dueMs: number): void {
    const i = this.targets.findIndex((t) => t.ns === ns && t.type === type);
    const plan = this.plans[i];
    if (plan === undefined) return;
    const local = this.serverOffsetMs === undefined ? Date.now() : dueMs - this.serverOffsetMs;
    if (local < plan.promoteAt) {
      plan.promoteAt = local;
      this.rearm();
    }
  }

  private rearm(): void {
    if (this.stopped || this.running !== undefined) return;
    const wake = Math.min(...this.plans.map((p) => Math.min(p.promoteAt, p.reclaimAt)));
    this.arm(Math.max(0, wake - Date.now()));
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass().finally(() => {
        this.running = undefined;
      });
    }, ms);
    this.timer.unref();
  }

  /** When to call again, in local ms, for a function's next due time `atMs` (server clock). */
  private static localDue(atMs: number, serverNow: number, progressed: boolean, now: number): number {
    if (atMs < 0) return now + MAX_SLEEP_MS;
    const least = progressed ? 0 : MIN_SLEEP_MS;
    return now + Math.min(Math.max(atMs - serverNow, least), MAX_SLEEP_MS);
  }

  /** One round trip with the calls that are due. */
  private async pass(): Promise<void> {
    const now = Date.now();
    const sent: { target: number; promote: boolean }[] = [];
    this.plans.forEach((p, i) => {
      if (p.promoteAt <= now) sent.push({ target: i, promote: true });
      if (p.reclaimAt <= now) sent.push({ target: i, promote: false });
    });
    let nextWake = 0;
    try {
      if (sent.length > 0) {
        const redis = await this.link.ready();
        // One pipeline; on a cluster one per namespace (a namespace's keys share one slot).
        const groups = new Map<string, number[]>();
        sent.forEach((s, k) => {
          const group = this.link.isCluster ? (this.targets[s.target] as MaintenanceTarget).ns : '';
          groups.set(group, [...(groups.get(group) ?? []), k]);
        });
        const replies = new Array<[Error | null, unknown]>(sent.length);
        await Promise.all([...groups.values()].map(async (ks) => {
          const pipeline = redis.pipeline();
          for (const k of ks) {
            const s = sent[k] as { target: number; promote: boolean };
            const t = this.targets[s.target] as MaintenanceTarget;
            const call = s.promote ? promoteCall(t.ns, t.type, { limit: PROMOTE_LIMIT })
              : reclaimCall(t.ns, t.type, {
                count: RECLAIM_COUNT, baseMs: t.retry.baseMs, maxMs: t.retry.maxMs, jitterSeed: randomInt(0, 2 ** 47), reaper: this.reaper,
              });
            const [cmd, args] = commandOf(call);
            pipeline.call(cmd, ...args);
          }
          const out = (await pipeline.exec()) ?? [];
          ks.forEach((k, j) => {
            replies[k] = out[j] ?? [new Error('no reply'), null];
          });
        }));
        const after = Date.now();
        sent.forEach((s, k) => {
          const [err, reply] = replies[k] ?? [new Error('no reply'), null];
          const plan = this.plans[s.target] as Plan;
          const t = this.targets[s.target] as MaintenanceTarget;
          const v = Array.isArray(reply) ? reply.map(Number) : [];
          if (err !== null || v.length !== (s.promote ? 3 : 5) || v.some((x) => !Number.isFinite(x))) {
            this.warn(`maintenance ${t.ns}/${t.type} ${s.promote ? 'baton_v2_promote' : 'baton_v2_reclaim'}: ${err?.message ?? 'unexpected reply'}`);
            if (s.promote) plan.promoteAt = after + MAX_SLEEP_MS;
            else plan.reclaimAt = after + MAX_SLEEP_MS;
            return;
          }
          const serverNow = v[v.length - 1] as number;
          this.serverOffsetMs = serverNow - after;
          if (s.promote) {
            plan.promoteAt = Maintenance.localDue(v[1] as number, serverNow, (v[0] as number) > 0, after);
          } else {
            plan.reclaimAt = Maintenance.localDue(v[3] as number, serverNow, (v[0] as number) > 0, after);
            if ((v[1] as number) > 0) plan.promoteAt = after; // retries scheduled: promote says when due
          }
        });
      }
      this.backoff.reset();
    } catch (e) {
      this.warn(`maintenance: ${(e as Error).message}`);
      nextWake = Date.now() + this.backoff.next();
    }
    if (this.stopped) return;
    const wake = nextWake || Math.min(...this.plans.map((p) => Math.min(p.promoteAt, p.reclaimAt)));
    this.arm(Math.max(0, wake - Date.now()));
  }
}
