// Redis Cluster through ioredis' own Cluster: the settings that keep the SDK's no-resend rule, and
// the functions library version check on every new connection to every primary.
//
// What ioredis 5.11 re-sends by itself, and what these settings leave of it:
// - MOVED / ASK replies: the command is sent again to the node named (a redirection means the
//   node did not run it), at most maxRedirections times; kept.
// - TRYAGAIN / CLUSTERDOWN replies: sent again after 100 ms (not run either); kept.
// - "Connection is closed." (the node's socket broke with the command written, so it may have
//   run): ioredis re-sends after retryDelayOnFailover ms unless that is 0; set to 0, so the
//   command fails (BatonError unavailable) and the caller decides, as with a single Redis.
// - Node connections never reconnect (ioredis gives them no retryStrategy); a lost node is
//   dropped and its slots found again (CLUSTER SLOTS) on the next redirection or refresh.
import { Cluster, type Redis, type RedisOptions } from 'ioredis';
import { BatonError } from './baton_error.js';
import { parseClusterUrl } from './cluster_url.js';

/** How often the slot map is read again (failovers are also learnt from MOVED replies). */
const SLOTS_REFRESH_MS = 5000;
/** How long ready() waits for the version check of a primary that is still connecting. */
const CHECK_WAIT_MS = 2000;

/**
 * A lazy ioredis Cluster for `url` (redis+cluster://...; a bad URL throws invalid_argument
 * naming redis_url). `nodeSettings` are the single-Redis settings: their retryStrategy becomes
 * the cluster's reconnect backoff, the rest (name, no offline queue, no retry) go to every node.
 */
export function openCluster(url: string, nodeSettings: RedisOptions): Cluster {
  const parsed = parseClusterUrl(url);
  const { retryStrategy, lazyConnect: _lazy, ...redisOptions } = nodeSettings;
  if (parsed.username !== undefined) redisOptions.username = parsed.username;
  if (parsed.password !== undefined) redisOptions.password = parsed.password;
  return new Cluster(parsed.seeds.map((s) => ({ host: s.host, port: s.port })), {
    lazyConnect: true,
    enableOfflineQueue: false,
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    retryDelayOnMoved: 0,
    maxRedirections: 16,
    scaleReads: 'master',
    slotsRefreshInterval: SLOTS_REFRESH_MS,
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) ?? null } : {}),
    redisOptions,
  });
}

const streamOf = (node: Redis): object | undefined => (node as unknown as { stream?: object }).stream;

/**
 * The functions library check of a cluster: every primary's connection (ioredis makes a new one
 * after a failover or a reconnect) is checked once before the SDK relies on it.
 */
export class ClusterVersionCheck {
  private readonly checked = new WeakSet<object>();
  private readonly inFlight = new Map<Redis, Promise<boolean>>();

  constructor(private readonly cluster: Cluster, private readonly check: (node: Redis) => Promise<void>) {}

  /**
   * Checks each primary whose connection was not checked yet; returns how many connections were
   * newly checked. Throws the node's error when its library is missing or another version
   * (version_mismatch, as on a single Redis). A primary that cannot be reached is skipped: calls
   * routed to it fail as unavailable, and it is checked again on the next call.
   */
  async checkPrimaries(): Promise<number> {
    const pending: Promise<boolean>[] = [];
    for (const node of this.cluster.nodes('master')) {
      if (node.status === 'end' || node.status === 'close') continue; // lost: ioredis drops it
      const stream = streamOf(node);
      if (node.status === 'ready' && stream !== undefined && this.checked.has(stream)) continue;
      pending.push(this.checkNode(node));
    }
    if (pending.length === 0) return 0;
    let newly = 0;
    let failure: unknown;
    for (const r of await Promise.allSettled(pending)) {
      if (r.status === 'rejected') failure ??= r.reason;
      else if (r.value) newly++;
    }
    if (failure !== undefined) throw failure;
    return newly;
  }

  /** True once checked; false when unreachable (or still connecting after CHECK_WAIT_MS). */
  private checkNode(node: Redis): Promise<boolean> {
    let p = this.inFlight.get(node);
    if (p === undefined) {
      p = (async () => {
        try {
          // A call the SDK routes to a node before its check (a MOVED to a new primary) still
          // gets "Function not found" -> version_mismatch when the library is missing there.
          await this.check(node);
          const stream = streamOf(node);
          if (stream !== undefined) this.checked.add(stream);
          return true;
        } catch (e) {
          if (e instanceof BatonError && e.code === 'unavailable') return false;
          throw e;
        } finally {
          this.inFlight.delete(node);
        }
      })();
      this.inFlight.set(node, p);
    }
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), CHECK_WAIT_MS);
      timer.unref();
    });
    return Promise.race([p, waited]).finally(() => clearTimeout(timer));
  }
}
