// A real redis-server for the tests (never a mock): started on a free loopback port without
// persistence, with the functions library loaded the way `baton init` does (functions/*.lua
// concatenated in file-name order, FUNCTION LOAD REPLACE).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { REPO_ROOT } from './paths.js';

const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';

/** The library source: functions/*.lua in file-name (byte) order, concatenated. */
export function librarySource(): string {
  const dir = join(REPO_ROOT, 'functions');
  const files = readdirSync(dir).filter((f) => f.endsWith('.lua')).sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
  return files.map((f) => readFileSync(join(dir, f), 'utf8')).join('');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20000, everyMs = 25): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export class RedisServer {
  private proc: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'baton-node-redis-'));
  private admin: Redis | undefined;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts a server (and loads the library unless told not to). */
  static async start(options: { loadLibrary?: boolean } = {}): Promise<RedisServer> {
    const s = new RedisServer(await freePort());
    await s.launch();
    if (options.loadLibrary !== false) await s.loadLibrary();
    return s;
  }

  private async launch(): Promise<void> {
    this.proc = spawn(REDIS_SERVER, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', this.dir, '--logfile', join(this.dir, 'redis.log')], { stdio: 'ignore' });
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    probe.on('error', () => undefined);
    await waitFor('redis-server to answer PING', async () => {
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        probe.disconnect();
        return false;
      }
    }, 10000, 20);
    probe.disconnect();
  }

  /** An admin connection (plain ioredis) for assertions. */
  redis(): Redis {
    if (this.admin === undefined) {
      this.admin = new Redis(this.url, { maxRetriesPerRequest: 1 });
      this.admin.on('error', () => undefined);
    }
    return this.admin;
  }

  async loadLibrary(): Promise<void> {
    await this.redis().call('FUNCTION', 'LOAD', 'REPLACE', librarySource());
  }

  /** Stops the server (SIGTERM, or SIGKILL with hard) and waits for its exit. */
  async stop(hard = false): Promise<void> {
    const p = this.proc;
    if (p === undefined || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill(hard ? 'SIGKILL' : 'SIGTERM');
    await exited;
    this.proc = undefined;
  }

  /** Stops and starts again on the same port: an empty server (no persistence), library optional. */
  async restart(options: { loadLibrary?: boolean } = {}): Promise<void> {
    await this.stop(true);
    await this.launch();
    if (options.loadLibrary !== false) await this.loadLibrary();
  }

  async close(): Promise<void> {
    this.admin?.disconnect();
    this.admin = undefined;
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
