// One call of a Redis Function of the baton_v2 library, as built by the generated wrappers
// (generated/calls.ts): the only shape in which FCALL arguments travel inside the SDK.

/** A value sent to Redis: strings and numbers as their text, Buffers byte for byte. */
export type Arg = string | number | Buffer;

export interface FunctionCall {
  /** The Redis Function, e.g. "baton_v2_dequeue". */
  readonly fn: string;
  /** Sent with FCALL_RO instead of FCALL. */
  readonly readOnly: boolean;
  readonly keys: readonly string[];
  readonly argv: readonly Arg[];
}

/** The command and its arguments, ready for ioredis' call()/callBuffer(). */
export function commandOf(call: FunctionCall): [string, Arg[]] {
  return [call.readOnly ? 'FCALL_RO' : 'FCALL', [call.fn, call.keys.length, ...call.keys, ...call.argv]];
}
