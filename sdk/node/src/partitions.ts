// Partitions: one namespace spread over several Redis Cluster slots (docs/cluster.md,
// "Partitions"). HGET baton:v2:partitions NS gives the partition count P (absent: 1). Partition 0
// is NS itself; partition p >= 1 has the keys of the storage namespace "NS:p". A task goes to
// partition fnv1a32(UTF-8 bytes of its id) mod P, the same rule in every language
// (contract/fixtures/partitions.json), so an id enqueued twice meets itself.
import { PARTITIONS } from './generated/protocol.js';
import type { RedisHandle } from './redis_link.js';

/** How old a cached partition count may get before it is read again (protocol.json refresh_seconds). */
export const PARTITION_REFRESH_MS = PARTITIONS.refreshSeconds * 1000;

/** FNV-1a, 32 bits, over the UTF-8 bytes of `text` (an unsigned integer). */
export function fnv1a32(text: string): number {
  let hash = PARTITIONS.hash.offsetBasis;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash = Math.imul((hash ^ byte) >>> 0, PARTITIONS.hash.prime) >>> 0; // modulo 2^32
  }
  return hash;
}

/** The partition (0..count-1) of a task id. */
export function partitionOf(taskId: string, count: number): number {
  return count <= 1 ? 0 : fnv1a32(taskId) % count;
}

/** The storage namespace of partition `p` of `ns`: ns itself for 0, "ns:p" otherwise. */
export function storageNamespace(ns: string, p: number): string {
  return p === 0 ? ns : `${ns}:${p}`;
}

/**
 * A partition count as stored (the "counts" of contract/fixtures/partitions.json): null (absent)
 * -> 1; ASCII digits only (any length, leading zeros allowed) worth at least 1 -> that value, at
 * most the maximum (1024); anything else -> 1 with `bad` set (the caller may log it, never fails on it).
 */
export function parsePartitionCount(value: string | null): { count: number; bad?: string } {
  if (value === null) return { count: 1 };
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const digit = value.charCodeAt(i) - 48; // '0'
    if (digit < 0 || digit > 9) return { count: 1, bad: value };
    // Capped while reading: digits past the maximum (however many) are the maximum.
    count = Math.min(count * 10 + digit, PARTITIONS.maxCount + 1);
  }
  if (count < 1) return { count: 1, bad: value };
  return { count: Math.min(count, PARTITIONS.maxCount) };
}

/** The partition counts of namespaces, each read again when older than PARTITION_REFRESH_MS. */
export class PartitionCounts {
  private readonly entries = new Map<string, { count: number; readAt: number; seq: number }>();
  /** Numbers the reads in the order they were sent: an older answer never replaces a newer one. */
  private seq = 0;
  /** Unparsable values already reported, per namespace: each is logged once, not on every read. */
  private readonly reported = new Map<string, Set<string>>();
  /** Reads sent and not answered yet, per namespace. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly warn: (message: string) => void = () => undefined) {}

  /**
   * Makes count() current for `namespaces`: reads those never read or read `maxAgeMs` ago or
   * more, in one HMGET (no command when none is stale; a namespace whose read is already in
   * flight, from a concurrent call, waits for that one). Redis errors are thrown as they come.
   */
  async refresh(redis: RedisHandle, namespaces: Iterable<string>, now = Date.now(), maxAgeMs = PARTITION_REFRESH_MS): Promise<void> {
    const stale: string[] = [];
    const waits = new Set<Promise<void>>();
    for (const ns of new Set(namespaces)) {
      const e = this.entries.get(ns);
      if (e !== undefined && now - e.readAt < maxAgeMs) continue;
      const pending = this.inFlight.get(ns);
      if (pending !== undefined) waits.add(pending);
      else stale.push(ns);
    }
    if (stale.length > 0) {
      const read = this.read(redis, stale, now);
      for (const ns of stale) this.inFlight.set(ns, read);
      waits.add(read.finally(() => {
        for (const ns of stale) if (this.inFlight.get(ns) === read) this.inFlight.delete(ns);
      }));
    }
    await Promise.all(waits);
  }

  /**
   * Reads the count of `ns` now, with its own HMGET, whatever the age of the copy (or a read in
   * flight): for the calls that must see a count grown a moment ago (cancel searches every
   * partition, configure writes every one). Redis errors are thrown as they come.
   */
  async readNow(redis: RedisHandle, ns: string, now = Date.now()): Promise<void> {
    await this.read(redis, [ns], now);
  }

  private async read(redis: RedisHandle, stale: readonly string[], now: number): Promise<void> {
    const seq = ++this.seq;
    const values = await redis.hmget(PARTITIONS.key, ...stale);
    stale.forEach((ns, i) => {
      const { count, bad } = parsePartitionCount(values[i] ?? null);
      if (bad !== undefined && !this.reported.get(ns)?.has(bad)) {
        this.reported.set(ns, (this.reported.get(ns) ?? new Set()).add(bad));
        this.warn(`${PARTITIONS.key} ${ns}: '${bad.slice(0, 40)}' is not a partition count (an integer 1..${PARTITIONS.maxCount}); using 1`);
      }
      if ((this.entries.get(ns)?.seq ?? 0) < seq) this.entries.set(ns, { count, readAt: now, seq });
    });
  }

  /** The count last read for `ns` (1 when never read). */
  count(ns: string): number {
    return this.entries.get(ns)?.count ?? 1;
  }
}
