// The rules of contract/task.schema.json, one function per rule, shared by the producer (enqueue
// options), the task-document parser and the worker's decoder, so that every path reports a
// broken field with the same words: "<field>: <rule> (got <value>)".
import { isLosslessNumber } from 'lossless-json';
import { invalidArgument } from './baton_error.js';

export const MAX_RETRY_LIMIT = 25;
export const DEFAULT_MAX_RETRY = 3;
export const MAX_DELAY_SECONDS = 31536000;
export const MIN_CREATED_AT = 946684800; // 2000-01-01
export const MAX_CREATED_AT = 4102444800; // 2100-01-01
export const MAX_EXECUTION_TIMEOUT = 86400;
export const MAX_PAYLOAD_BYTES = 524288;
const TRACEPARENT_MAX_CHARS = 256;
const TRACESTATE_MAX_CHARS = 512;
const HEADERS_MAX_FIELDS = 64;
const HEADER_VALUE_MAX_CHARS = 1024;
const BRIEF_MAX = 40;

/** The contract's own top-level fields, in schema order; every other one is "extra". */
export const TASK_FIELDS = [
  'task_id', 'namespace', 'task_type', 'payload', 'max_retry', 'delay_seconds', 'created_at', 'execution_timeout',
] as const;
const TASK_FIELD_SET: ReadonlySet<string> = new Set(TASK_FIELDS);
export function isTaskField(key: string): boolean {
  return TASK_FIELD_SET.has(key);
}

const TASK_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const TASK_ID_RULE = 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';
export const NAME_RULE = 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';

export function isValidTaskId(id: string): boolean {
  return TASK_ID_RE.test(id);
}
export function isValidName(name: string): boolean {
  return NAME_RE.test(name);
}

/** An integer field with an inclusive range: "<field>: <wording> min..max". */
export interface IntegerRule {
  readonly field: string;
  readonly wording: string;
  readonly min: number;
  readonly max: number;
  /** created_at: say "milliseconds?" for values that look like Unix milliseconds. */
  readonly hintMilliseconds?: boolean;
}
export const MAX_RETRY_RULE: IntegerRule = { field: 'max_retry', wording: 'must be an integer', min: 0, max: MAX_RETRY_LIMIT };
export const DELAY_SECONDS_RULE: IntegerRule = { field: 'delay_seconds', wording: 'must be an integer', min: 0, max: MAX_DELAY_SECONDS };
export const CREATED_AT_RULE: IntegerRule = {
  field: 'created_at', wording: 'must be Unix seconds', min: MIN_CREATED_AT, max: MAX_CREATED_AT, hintMilliseconds: true,
};
export const EXECUTION_TIMEOUT_RULE: IntegerRule = {
  field: 'execution_timeout', wording: 'must be an integer', min: 1, max: MAX_EXECUTION_TIMEOUT,
};

/** Unicode code points, as JSON Schema's maxLength counts. */
export function charLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function truncate(text: string): string {
  if (text.length <= BRIEF_MAX) return text;
  return [...text.slice(0, BRIEF_MAX - 3)].join('') + '...';
}

/** "object", "array", "string", "number", "boolean", "null" (also for lossless numbers). */
export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (isLosslessNumber(value) || typeof value === 'number' || typeof value === 'bigint') return 'number';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'string' || typeof value === 'boolean') return typeof value;
  return typeof value;
}

/** A short printable rendering of a value for error messages (at most ~40 characters). */
export function briefValue(value: unknown): string {
  if (Array.isArray(value)) {
    return value.length === 0 ? '[]' : `an array of ${value.length} ${value.length === 1 ? 'element' : 'elements'}`;
  }
  if (isLosslessNumber(value)) return truncate(value.toString());
  if (typeof value === 'bigint') return truncate(value.toString());
  if (value !== null && typeof value === 'object') {
    const n = Object.keys(value).length;
    return n === 0 ? '{}' : `an object of ${n} ${n === 1 ? 'element' : 'elements'}`;
  }
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return truncate(JSON.stringify(value));
}

function got(shown: string): string {
  return ` (got ${shown})`;
}

function integerError(rule: IntegerRule, shown: string, looksLikeMs: boolean) {
  return invalidArgument(rule.field, `${rule.wording} ${rule.min}..${rule.max}${got(shown + (looksLikeMs ? ': milliseconds?' : ''))}`);
}

/**
 * The integer value of a JSON number (number, bigint or lossless number) when it is integral
 * and within the rule's range (JSON Schema counts 3.0 as an integer); throws invalid_argument
 * naming the field otherwise ("2.5", "3" as a string, true and null are not integers).
 */
export function readInteger(rule: IntegerRule, value: unknown): number {
  // The hot path (a plain number in range) formats nothing.
  if (typeof value === 'number' && Number.isInteger(value) && value >= rule.min && value <= rule.max) return value;
  let n: number;
  let shown: string;
  if (typeof value === 'number') {
    n = value;
    shown = briefValue(value);
  } else if (typeof value === 'bigint') {
    n = Number(value);
    shown = value.toString();
  } else if (isLosslessNumber(value)) {
    n = Number(value.toString());
    shown = truncate(value.toString());
  } else {
    throw integerError(rule, briefValue(value), false);
  }
  if (!Number.isFinite(n) || !Number.isInteger(n)) throw integerError(rule, shown, false);
  if (n < rule.min || n > rule.max) {
    const looksLikeMs = rule.hintMilliseconds === true && n >= rule.min * 1000 && n <= rule.max * 1000;
    throw integerError(rule, shown, looksLikeMs);
  }
  return n;
}

/** A plain decimal integer text ("-12"; no spaces, no "+") within the rule's range. */
export function parseIntegerText(rule: IntegerRule, text: string): number {
  if (!/^-?[0-9]+$/.test(text)) throw integerError(rule, truncate(JSON.stringify(text)), false);
  return readInteger(rule, Number(text));
}

function briefName(value: string, max: number): string {
  return value.length > max ? `a string of ${value.length} characters` : briefValue(value);
}

export function checkTaskId(id: unknown): string {
  if (typeof id === 'string' && TASK_ID_RE.test(id)) return id;
  throw invalidArgument('task_id', TASK_ID_RULE + got(typeof id === 'string' ? briefName(id, 128) : briefValue(id)));
}

/** `field` is "namespace" or "task_type". */
export function checkName(field: string, name: unknown): string {
  if (typeof name === 'string' && NAME_RE.test(name)) return name;
  throw invalidArgument(field, NAME_RULE + got(typeof name === 'string' ? briefName(name, 64) : briefValue(name)));
}

/** The JSON type a text starts with, judged by its first significant character. */
export function textTypeName(text: string): string {
  const m = /[^ \t\r\n]/.exec(text);
  if (m === null) return 'nothing';
  switch (m[0]) {
    case '{': return 'object';
    case '[': return 'array';
    case '"': return 'string';
    case 't': case 'f': return 'boolean';
    case 'n': return 'null';
    default: return 'number';
  }
}

/** The payload size rule on its serialized text (bytes of UTF-8). */
export function checkPayloadSize(byteLength: number): void {
  if (byteLength > MAX_PAYLOAD_BYTES) {
    throw invalidArgument('payload', `must be at most ${MAX_PAYLOAD_BYTES} bytes serialized${got(String(byteLength))}`);
  }
}

/**
 * The payload rules on its serialized text: at most 524288 bytes, valid JSON, an object.
 * Returns the value JSON.parse made of it (numbers beyond 2^53 rounded: only for checking).
 */
export function checkPayloadText(text: string): unknown {
  checkPayloadSize(Buffer.byteLength(text, 'utf8'));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw invalidArgument('payload', `not valid JSON: ${(e as Error).message}`);
  }
  const type = textTypeName(text);
  if (type !== 'object') throw invalidArgument('payload', `must be a JSON object${got(type)}`);
  return value;
}

function checkShortString(field: string, value: unknown, maxChars: number): void {
  const rule = `must be a string of at most ${maxChars} characters`;
  if (typeof value !== 'string') throw invalidArgument(field, rule + got(briefValue(value)));
  const chars = charLength(value);
  if (chars > maxChars) throw invalidArgument(field, rule + got(`a string of ${chars} characters`));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !isLosslessNumber(v);
}

export function checkTrace(trace: unknown): void {
  if (!isPlainObject(trace)) throw invalidArgument('trace', `must be a JSON object${got(jsonTypeName(trace))}`);
  for (const [key, value] of Object.entries(trace)) {
    let max: number;
    if (key === 'traceparent') max = TRACEPARENT_MAX_CHARS;
    else if (key === 'tracestate') max = TRACESTATE_MAX_CHARS;
    else throw invalidArgument('trace', `unknown field ${JSON.stringify(key)} (allowed: traceparent, tracestate)`);
    checkShortString(`trace.${key}`, value, max);
  }
}

export function checkHeaders(headers: unknown): void {
  if (!isPlainObject(headers)) throw invalidArgument('headers', `must be a JSON object${got(jsonTypeName(headers))}`);
  const entries = Object.entries(headers);
  if (entries.length > HEADERS_MAX_FIELDS) {
    throw invalidArgument('headers', `must have at most ${HEADERS_MAX_FIELDS} fields${got(String(entries.length))}`);
  }
  for (const [key, value] of entries) checkShortString(`headers.${key}`, value, HEADER_VALUE_MAX_CHARS);
}

/** The extra top-level fields: an object without contract field names; trace and headers shaped. */
export function checkExtra(extra: unknown): Record<string, unknown> {
  if (!isPlainObject(extra)) throw invalidArgument('extra', `must be a JSON object${got(jsonTypeName(extra))}`);
  for (const key of Object.keys(extra)) {
    if (isTaskField(key)) {
      throw invalidArgument('extra', `must not contain the contract field ${JSON.stringify(key)} (use the option instead)`);
    }
  }
  if ('trace' in extra) checkTrace(extra.trace);
  if ('headers' in extra) checkHeaders(extra.headers);
  return extra;
}
