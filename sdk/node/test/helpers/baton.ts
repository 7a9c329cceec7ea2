// Small helpers over a test Redis: the per-file server and client, unique namespaces and readers of
// Baton's keys (docs/keyspace.md).
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import type { Cluster, Redis } from 'ioredis';
import { Client, Worker, type WorkerOptions } from '../../src/index.js';
import { RedisServer } from './redis_server.js';
import { silentLogger } from '../../src/logger.js';
import { commandOf } from '../../src/function_call.js';
import { dequeue as dequeueCall } from '../../src/generated/calls.js';

/** A namespace no other test uses. */
export function uniqueNs(prefix = 't'): string {
  return `${prefix}${randomBytes(4).toString('hex')}`;
}

export interface AttemptError { attempt: number; kind: string; error: string; stack: string; worker: string; at_ms: number }

/** Failures kept per task in the errors hash, the newest (ERRORS_KEPT in functions/00-header.lua). */
export const ERRORS_KEPT = 50;

/**
 * The failed attempts recorded for a task, oldest first (baton:v2:{NS}:errors, one field per
 * failure, docs/keyspace.md "Error history"): HGET ID -> N, then HMGET ID|max(1,N-49) .. ID|N.
 */
export async function attemptErrors(redis: Redis | Cluster, ns: string, id: string): Promise<AttemptError[]> {
  const key = `baton:v2:{${ns}}:errors`;
  const counter = await redis.hget(key, id);
  if (counter === null) return [];
  const n = Number(counter);
  const fields: string[] = [];
  for (let k = Math.max(1, n - ERRORS_KEPT + 1); k <= n; k++) fields.push(`${id}|${k}`);
  if (fields.length === 0) return [];
  const values = await redis.hmget(key, ...fields);
  return values.filter((v): v is string => v !== null).map((v) => JSON.parse(v) as AttemptError);
}

/** Whether the task is final-done (in the done set, no `ended` state). */
export async function isDone(redis: Redis | Cluster, ns: string, id: string): Promise<boolean> {
  const [score, ended] = await Promise.all([redis.zscore(`baton:v2:{${ns}}:done`, id), redis.hget(`baton:v2:{${ns}}:ended`, id)]);
  return score !== null && ended === null;
}

export async function isDead(redis: Redis | Cluster, ns: string, type: string, id: string): Promise<boolean> {
  return (await redis.zscore(`baton:v2:{${ns}}:dead:${type}`, id)) !== null;
}

/** The task record "STATE|TYPE|ATTEMPT|SID", or null. */
export function record(redis: Redis | Cluster, ns: string, id: string): Promise<string | null> {
  return redis.hget(`baton:v2:{${ns}}:tasks`, id);
}

export function quietWorker(url: string, options: WorkerOptions = {}): Worker {
  return new Worker({ redis: url, logger: silentLogger, blockMs: 500, ...options });
}

/** The values baton_v2_dequeue delivers for one task (SID, id, payload, ... as strings). */
export interface DeliveredValues {
  sid: string; id: string; payload: string; max_retry: string; delay_seconds: string; created_at: string;
  execution_timeout: string; extra: string; attempt: string;
}

/** Takes up to `count` tasks of (ns, type) through the protocol (as consumer "inspector"). */
export async function dequeueValues(redis: Redis, ns: string, type: string, count = 100): Promise<DeliveredValues[]> {
  const [cmd, args] = commandOf(dequeueCall(ns, type, { group: 'baton', consumer: 'inspector', count, leaseMs: 60000 }));
  const reply = (await redis.call(cmd, ...args)) as [string[], string, number];
  const names = ['sid', 'id', 'payload', 'max_retry', 'delay_seconds', 'created_at', 'execution_timeout', 'extra', 'attempt'] as const;
  const out: DeliveredValues[] = [];
  for (let i = 0; i < reply[0].length; i += 9) {
    out.push(Object.fromEntries(names.map((n, k) => [n, reply[0][i + k] as string])) as unknown as DeliveredValues);
  }
  return out;
}

/**
 * A private redis-server and a connected Client for the tests of one file: started before the
 * first test, closed after the last. Read `env.server` / `env.client` inside tests only.
 */
export function serverAndClient(): { server: RedisServer; client: Client } {
  const env = {} as { server: RedisServer; client: Client };
  before(async () => {
    env.server = await RedisServer.start();
    env.client = await Client.connect({ redis: env.server.url });
  });
  after(async () => {
    await env.client.close();
    await env.server.close();
  });
  return env;
}
