// Task ids: RFC 9562 UUIDv7, lowercase canonical form, by Baton's rule (as src/core/uuid7.cpp):
// unix_ts_ms (48 bits) | version 7 (4) | rand_a (12) | variant 0b10 (2) | rand_b (62).
// rand_a is a counter (RFC 9562 section 6.2, method 1) so ids made by one process sort in creation
// order: on a new millisecond it restarts at a random value below 2048; within the same
// millisecond, or when the clock steps back, it is incremented; when it would overflow 12 bits the
// timestamp moves one ms ahead rather than going back.
import { randomFillSync } from 'node:crypto';

const ID_RANDOM_BYTES = 10; // 2 to seed the counter, 8 for variant + rand_b
const pool = Buffer.alloc(ID_RANDOM_BYTES * 128);
let poolPos = pool.length;
let lastMs = 0;
let counter = 0;

/** Random bytes for one id from a pooled CSPRNG buffer (one getrandom call per 128 ids). */
function randomBytesForId(): Buffer {
  if (poolPos >= pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  const out = pool.subarray(poolPos, poolPos + ID_RANDOM_BYTES);
  poolPos += ID_RANDOM_BYTES;
  return out;
}

const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex = (byte: number): string => HEX[byte & 0xff] as string;

/** A new UUIDv7 such as "0190f3c1-7a2e-7cc1-9a51-3b0d8e2f4c11"; strictly increasing per process. */
export function newTaskId(now: number = Date.now()): string {
  const r = randomBytesForId();
  if (now > lastMs) {
    lastMs = now;
    counter = (((r[0] as number) << 8) | (r[1] as number)) & 0x7ff;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = (((r[0] as number) << 8) | (r[1] as number)) & 0x7ff;
  }
  // 48-bit timestamp, big-endian, split in two 24-bit halves to stay within exact bit operations.
  const hi = Math.floor(lastMs / 0x1000000);
  const lo = lastMs % 0x1000000;
  return (
    hex(hi >>> 16) + hex(hi >>> 8) + hex(hi) + hex(lo >>> 16) + '-' +
    hex(lo >>> 8) + hex(lo) + '-' +
    hex(0x70 | (counter >>> 8)) + hex(counter) + '-' +
    hex(0x80 | ((r[2] as number) & 0x3f)) + hex(r[3] as number) + '-' +
    hex(r[4] as number) + hex(r[5] as number) + hex(r[6] as number) + hex(r[7] as number) + hex(r[8] as number) + hex(r[9] as number)
  );
}

const UUID7_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** True for a lowercase canonical UUIDv7 (version 7, variant 10). */
export function isUuidV7(id: string): boolean {
  return UUID7_RE.test(id);
}
