// Errors as values with a code: every failure the SDK reports is a BatonError whose `code` is one
// of contract/errors.json (generated/errors.ts), so callers branch on codes, not on wording.
import { ERROR_CODES, LUA_ERROR_CODES, REDIS_ERRORS, type ErrorCode } from './generated/errors.js';

export type { ErrorCode } from './generated/errors.js';

export class BatonError extends Error {
  /** The contract code (invalid_argument, not_found, conflict, unavailable, ...). */
  readonly code: ErrorCode;
  /** For invalid_argument: the offending field ("max_retry", "trace.traceparent", "document"). */
  readonly field: string | undefined;
  /** True when the same call may succeed later without a change by the caller. */
  readonly retryable: boolean;
  /** What to do about it, when known (e.g. "run 'baton init'"). */
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { field?: string; hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BatonError';
    this.code = code;
    this.field = options.field;
    this.hint = options.hint;
    this.retryable = ERROR_CODES[code].retryable;
  }

  /** A prefixed copy ("requests[3]: max_retry: ...") keeping code and field. */
  withContext(context: string): BatonError {
    const e = new BatonError(this.code, `${context}: ${this.message}`, { field: this.field, hint: this.hint, cause: this.cause });
    e.stack = this.stack;
    return e;
  }
}

/** `<field>: <rule>` as invalid_argument: the message shape of every contract violation. */
export function invalidArgument(field: string, rule: string): BatonError {
  return new BatonError('invalid_argument', `${field}: ${rule}`, { field });
}

/**
 * The BatonError for an error reply of Redis or of the functions library. `BATON_INVALID
 * field: rule` keeps its words ("field: rule") and names the field; Redis' own errors map by
 * their first word (OOM, READONLY, LOADING, ...), "Function not found" to version_mismatch.
 */
export function fromErrorReply(reply: string, operation?: string): BatonError {
  const at = operation ? `${operation}: ` : '';
  const space = reply.indexOf(' ');
  const first = space < 0 ? reply : reply.slice(0, space);
  const luaCode = LUA_ERROR_CODES[first];
  if (luaCode !== undefined) {
    const rest = space < 0 ? '' : reply.slice(space + 1);
    const colon = rest.indexOf(': ');
    const field = luaCode === 'invalid_argument' && colon > 0 ? rest.slice(0, colon) : undefined;
    return new BatonError(luaCode, at + rest, field === undefined ? {} : { field });
  }
  for (const e of REDIS_ERRORS) {
    if (reply.startsWith(e.prefix)) return new BatonError(e.code, `${at}${reply} (${e.hint})`, { hint: e.hint });
  }
  return new BatonError('internal', `${at}unexpected error reply: ${reply}`);
}

/** A connection-level failure (refused, reset, closed, timed out) as `unavailable`. */
export function unavailable(message: string, cause?: unknown): BatonError {
  return new BatonError('unavailable', message, { cause });
}

/** Any error thrown by ioredis for a command, mapped to a BatonError. */
export function fromRedisError(err: unknown, operation?: string): BatonError {
  if (err instanceof BatonError) return operation ? err.withContext(operation) : err;
  const e = err as { name?: string; message?: string };
  const message = e?.message ?? String(err);
  // ioredis' ReplyError: an error reply from the server. Everything else is the connection.
  if (e?.name === 'ReplyError') return fromErrorReply(message, operation);
  return unavailable(`${operation ? operation + ': ' : ''}redis: ${message}`, err);
}
