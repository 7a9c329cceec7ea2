// Payload text in and out. A payload is a JSON object that travels byte for byte: a producer
// may hand over its exact text (rawJson) or a value to serialize; a handler can always read the
// bytes as delivered (Task.payloadBytes / payloadText) and choose how to parse them.
//
// Big numbers: JSON.parse turns every number into a double, so integers beyond 2^53 lose digits
// (12345678901234567890 becomes 12345678901234567000). parseLossless keeps them: safe numbers
// stay numbers, integers that do not fit become bigint, other numbers a double cannot hold
// exactly (more than 17 significant digits, 1e400) become LosslessNumber (lossless-json), which
// keeps the digits as text. stringifyJson writes all three back exactly.
import { isLosslessNumber, LosslessNumber, parse, splitNumber, stringify, isInteger } from 'lossless-json';
import { invalidArgument } from './baton_error.js';
import { checkPayloadSize, checkPayloadText } from './task_rules.js';

const RAW = Symbol.for('baton.rawJson');

/** JSON text handed over as is (see rawJson). */
export interface RawJson {
  readonly [RAW]: true;
  /** The JSON text, exactly as given. */
  readonly text: string;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Marks JSON text (a string, or UTF-8 bytes) to be sent exactly as it is: no parse and
 * re-serialization that could change number spelling or escapes. It is still checked (valid
 * JSON, an object, at most 524288 bytes) when enqueued.
 */
export function rawJson(text: string | Uint8Array): RawJson {
  let s: string;
  if (typeof text === 'string') {
    s = text;
  } else {
    try {
      s = strictUtf8.decode(text);
    } catch {
      throw invalidArgument('payload', 'must be UTF-8 JSON text (got bytes that are not UTF-8)');
    }
  }
  return { [RAW]: true, text: s };
}

export function isRawJson(value: unknown): value is RawJson {
  return value !== null && typeof value === 'object' && (value as Record<symbol, unknown>)[RAW] === true;
}

/**
 * True when JSON.parse would change the value of this JSON number text: it overflows, underflows
 * to zero, or the nearest double does not print back to the same significant digits and exponent
 * (12345678901234567890 -> 12345678901234567000). 1.10, -0, 0.1 and 1e308 are kept.
 */
export function losesDigits(text: string): boolean {
  const num = Number(text);
  if (!Number.isFinite(num)) return true;
  if (num === 0) return /[1-9]/.test(text.replace(/[eE].*$/, ''));
  const a = splitNumber(text);
  const b = splitNumber(String(num));
  return a.sign !== b.sign || a.digits.replace(/0+$/, '') !== b.digits.replace(/0+$/, '') || a.exponent !== b.exponent;
}

/** Numbers as parseLossless makes them: safe -> number, big integer -> bigint, else LosslessNumber. */
function reviveNumber(text: string): number | bigint | LosslessNumber {
  if (!losesDigits(text)) return Number(text);
  if (isInteger(text)) return BigInt(text);
  return new LosslessNumber(text);
}

/**
 * Parses JSON text without losing a digit: numbers that a double holds exactly stay numbers,
 * larger integers become bigint, other unsafe numbers LosslessNumber (its .toString() is the
 * original text). Throws SyntaxError on invalid JSON.
 */
export function parseLossless(text: string): unknown {
  return parse(text, null, reviveNumber);
}

/** True when JSON.parse would change the value of at least one number of `text`. */
export function hasUnsafeNumbers(text: string): boolean {
  let unsafe = false;
  parse(text, null, (n: string) => {
    if (losesDigits(n)) unsafe = true;
    return 0;
  });
  return unsafe;
}

/**
 * Compact JSON text of a value. Plain values go through JSON.stringify; values holding bigint
 * or LosslessNumber go through lossless-json, which writes their digits exactly.
 */
export function stringifyJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError) || !/BigInt/i.test(e.message)) throw e;
    text = undefined;
  }
  // JSON.stringify writes a LosslessNumber as an object of its fields: redo it losslessly.
  if (text === undefined || text.includes('"isLosslessNumber":true')) {
    text = stringify(value) ?? undefined;
  }
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

/** The payload text to send for a payload option (object, RawJson), checked by the contract rules. */
export function encodePayload(payload: unknown): string {
  if (isRawJson(payload)) {
    checkPayloadText(payload.text);
    return payload.text;
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || isLosslessNumber(payload) ||
      Buffer.isBuffer(payload)) {
    const type = payload === null ? 'null' : Array.isArray(payload) ? 'array' : Buffer.isBuffer(payload) ? 'Buffer (use rawJson)' : typeof payload;
    throw invalidArgument('payload', `must be a JSON object (got ${type})`);
  }
  let text: string;
  try {
    text = stringifyJson(payload);
  } catch (e) {
    throw invalidArgument('payload', `cannot be serialized as JSON: ${(e as Error).message}`);
  }
  checkPayloadSize(Buffer.byteLength(text, 'utf8'));
  return text;
}

export { LosslessNumber, isLosslessNumber };
