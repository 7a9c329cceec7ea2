// Key names, built in exactly one place (docs/keyspace.md), from the generated patterns of
// contract/protocol.json: baton:v2:{NS}:kind[:TYPE]. The {NS} hash tag keeps every key of a
// namespace in one Redis Cluster slot.
import { GLOBAL_KEYS, KEY_KINDS, type GlobalKey, type KeyKind } from './generated/protocol.js';

function fill(pattern: string, slot: string, value: string): string {
  if (!pattern.endsWith(':' + slot)) throw new Error(`key pattern ${pattern} does not end in :${slot}`);
  return pattern.slice(0, pattern.length - slot.length) + value;
}

/** The key of `kind` in namespace `ns` (and task type `type` for typed kinds). */
export function keyOf(kind: KeyKind | GlobalKey, ns: string, type = ''): string {
  if (kind in GLOBAL_KEYS) return GLOBAL_KEYS[kind as GlobalKey];
  const spec = KEY_KINDS[kind as KeyKind];
  const key = spec.pattern.replace('{NS}', '{' + ns + '}');
  if (!spec.typed) return key;
  return fill(key, 'TYPE', type);
}

/** The unique-key lock key of `uniqueKeyName` in namespace `ns`. */
export function uniqueKey(ns: string, uniqueKeyName: string): string {
  return fill(keyOf('unique', ns), 'KEY', uniqueKeyName);
}

// The KEYS list of one function for one (ns, type) never changes: cache it (the worker's hot
// path calls dequeue/ack with the same keys thousands of times per second).
const cache = new Map<string, readonly string[]>();
const CACHE_LIMIT = 10000;

/** The keys of `kinds` (a function's KEYS list) for (ns, type), in order. A fresh array. */
export function keysFor(kinds: readonly (KeyKind | GlobalKey)[], ns: string, type: string): string[] {
  const id = kinds.join(',') + '|' + ns + '|' + type;
  let keys = cache.get(id);
  if (keys === undefined) {
    keys = kinds.map((k) => keyOf(k, ns, type));
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(id, keys);
  }
  return keys.slice();
}
