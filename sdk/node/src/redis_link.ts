// One Redis connection (ioredis) that checks the functions library version on every connect
// and reconnect, as docs/protocol.md requires, before any call of this SDK goes through it.
//
// Settings chosen for a worker that must own its retries:
// - no offline queue and no automatic resend: a command issued while the link is down fails at
//   once (BatonError unavailable) instead of queueing or being replayed behind our back; callers
//   wait for ready() and decide what to send again (acks and fails are safe to resend);
// - maxRetriesPerRequest 0: commands in flight when the connection breaks are rejected at once;
// - reconnect backoff 100 ms doubling to 5 s, forever, as the C++ worker.
// A redis+cluster:// URL opens an ioredis Cluster instead (cluster_link.ts has its settings and
// the version check of every primary).
import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { BatonError, fromRedisError, unavailable } from './baton_error.js';
import { ClusterVersionCheck, openCluster } from './cluster_link.js';
import { isClusterUrl } from './cluster_url.js';
import { commandOf, type FunctionCall } from './function_call.js';
import { version as versionCall } from './generated/calls.js';
import { VERSION } from './generated/protocol.js';

/**
 * Where Redis is: "redis://[user:password@]host:port[/db]" or a cluster's seed nodes
 * "redis+cluster://[user:password@]host:port[,host:port...]" (default: BATON_REDIS_URL or loopback).
 */
export function defaultRedisUrl(): string {
  return process.env.BATON_REDIS_URL ?? 'redis://127.0.0.1:6379';
}

export interface LinkOptions {
  /** CLIENT SETNAME of the connection (shows in CLIENT LIST). */
  readonly name?: string;
  /** Extra ioredis options (TLS, sentinels, ...); the retry settings above always apply. */
  readonly redisOptions?: RedisOptions;
  /** How long ready() waits for a connection before failing with unavailable. */
  readonly connectTimeoutMs?: number;
}

/** The version-mismatch error of a library version other than VERSION ("none" = not loaded). */
export function versionMismatch(loaded: string): BatonError {
  return new BatonError('version_mismatch',
    `functions library version ${loaded} loaded in Redis, this client needs ${VERSION}: run 'baton init'`,
    { hint: "run 'baton init'" });
}

/** A connection to a single Redis or to a cluster: both run every command the SDK sends. */
export type RedisHandle = Redis | Cluster;

/** The retry settings of every connection (see the top of this file). */
export const NO_RESEND = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
} as const;

/** Reconnect backoff: 100 ms doubling to 5 s, forever. */
export const reconnectDelay = (times: number): number => Math.min(100 * 2 ** Math.min(times - 1, 6), 5000);

export class RedisLink {
  readonly redis: RedisHandle;
  /** Set for a redis+cluster:// URL: checks the library on each primary's connection. */
  private readonly clusterCheck: ClusterVersionCheck | undefined;
  private readonly connectTimeoutMs: number;
  // The socket whose library version was checked; a reconnect makes a new one.
  private checkedStream: unknown = null;
  /** Counts connections checked so far: a change means Redis may have restarted (or been flushed). */
  connections = 0;
  private closed = false;
  /** The last connection error ioredis reported (for messages). */
  lastError: Error | undefined;

  constructor(url: string, options: LinkOptions = {}) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    const settings: RedisOptions = {
      ...options.redisOptions,
      lazyConnect: true,
      ...NO_RESEND,
      retryStrategy: reconnectDelay,
    };
    if (options.name !== undefined) settings.connectionName = options.name;
    const onError = (e: Error) => {
      this.lastError = e;
    };
    if (isClusterUrl(url)) {
      const cluster = openCluster(url, settings);
      this.redis = cluster;
      this.clusterCheck = new ClusterVersionCheck(cluster, (node) => this.checkVersion(node));
      cluster.on('node error', onError);
    } else {
      this.redis = new Redis(url, settings);
    }
    // Without a listener ioredis prints every connection error; callers see them as BatonErrors.
    this.redis.on('error', onError);
  }

  /** True for a redis+cluster:// URL. */
  get isCluster(): boolean {
    return this.clusterCheck !== undefined;
  }

  /**
   * The connection once it is up and its library version checked (once per connection).
   * Throws BatonError unavailable when Redis cannot be reached within the timeout, and
   * version_mismatch when the library is missing or another version.
   */
  async ready(timeoutMs: number = this.connectTimeoutMs): Promise<RedisHandle> {
    if (this.closed) throw unavailable('connection closed');
    const r = this.redis;
    if (r.status !== 'ready') {
      if (r.status === 'wait') r.connect().catch(() => undefined);
      await this.waitReady(timeoutMs);
    }
    if (this.clusterCheck !== undefined) {
      this.connections += await this.clusterCheck.checkPrimaries();
      return r;
    }
    const stream = (r as unknown as { stream: unknown }).stream;
    if (stream !== this.checkedStream) {
      await this.checkVersion();
      this.checkedStream = stream;
      this.connections++;
    }
    return r;
  }

  private waitReady(timeoutMs: number): Promise<void> {
    const r = this.redis;
    if (r.status === 'ready') return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: BatonError) => {
        clearTimeout(timer);
        r.off('ready', onReady);
        r.off('end', onEnd);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => done();
      const onEnd = () => done(unavailable('connection closed'));
      const timer = setTimeout(() => {
        const why = this.lastError ? `: ${this.lastError.message}` : '';
        done(unavailable(`redis not reachable within ${timeoutMs} ms${why}`, this.lastError));
      }, timeoutMs);
      r.on('ready', onReady);
      r.on('end', onEnd);
    });
  }

  /** Checks the library version on `node` (default: the single Redis). */
  private async checkVersion(node: Redis | undefined = undefined): Promise<void> {
    let reply: unknown;
    try {
      const [cmd, args] = commandOf(versionCall());
      reply = await (node ?? this.redis).call(cmd, ...args);
    } catch (e) {
      const err = fromRedisError(e);
      if (err.code === 'version_mismatch') throw versionMismatch('none');
      throw err;
    }
    const loaded = String(reply);
    if (loaded !== VERSION) throw versionMismatch(loaded);
  }

  /** Runs one function call (string replies). Errors are BatonErrors. */
  async fcall(call: FunctionCall, operation?: string): Promise<unknown> {
    const r = await this.ready();
    const [cmd, args] = commandOf(call);
    try {
      return await r.call(cmd, ...args);
    } catch (e) {
      throw fromRedisError(e, operation);
    }
  }

  /** True while the socket is up (the version may still need a check). */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  /** Drops the socket at once (pending commands fail); ready() reconnects. */
  dropConnection(): void {
    if (this.closed) return;
    this.redis.disconnect(true);
  }

  /** Closes for good: QUIT when idle, else drop. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      if (this.redis.status === 'ready') {
        await Promise.race([this.redis.quit(), new Promise((r) => setTimeout(r, 1000).unref())]);
      }
    } catch {
      // closing anyway
    }
    this.redis.disconnect(false);
  }
}
