// Catches failures that escape a handler's promise: a rejection the handler forgot to await, an
// exception thrown from a timer or callback it started. Node would crash the process on either
// (the gateway's HTTP server with it). While a worker runs, listeners on the process look up the
// attempt the failing code belongs to (AsyncLocalStorage follows promises, timers and callbacks;
// Node enters the rejected promise's context before emitting unhandledRejection) and fail that
// attempt instead.
//
// A failure that belongs to no attempt is not ours: when the application has its own listener
// it decides; otherwise we do what Node would do without us (crash, or for rejections what
// --unhandled-rejections says), so installing a worker never silences the application's own bugs.
//
// The state lives on globalThis: with two copies of the SDK in one process (its ESM and CJS
// builds, or two versions) there is still one pair of listeners, and it asks every copy's scope.
import { inspect } from 'node:util';
import { attemptScope, type AttemptScope } from './attempt.js';

interface SharedGuard {
  /** One per SDK copy with a worker running: that copy's current attempt, if any. */
  readonly lookups: Map<() => AttemptScope | undefined, number>;
  installed: { rejection: (reason: unknown) => void; exception: (error: unknown) => void } | undefined;
}

const KEY = Symbol.for('baton.processGuard.v1');
const shared: SharedGuard = ((globalThis as Record<symbol, unknown>)[KEY] as SharedGuard | undefined) ??
  ((globalThis as Record<symbol, unknown>)[KEY] = { lookups: new Map(), installed: undefined } as SharedGuard);

const lookup = (): AttemptScope | undefined => attemptScope.getStore();

function currentScope(): AttemptScope | undefined {
  for (const l of shared.lookups.keys()) {
    const s = l();
    if (s !== undefined) return s;
  }
  return undefined;
}

/** Node's --unhandled-rejections mode (the command line wins over NODE_OPTIONS, as in Node). */
export function unhandledRejectionsMode(execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? ''): string {
  const args = [...nodeOptions.split(/\s+/), ...execArgv];
  let mode = 'throw';
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a.startsWith('--unhandled-rejections=')) mode = a.slice('--unhandled-rejections='.length);
    else if (a === '--unhandled-rejections' && i + 1 < args.length) mode = args[++i] as string;
  }
  return mode;
}

function makeListeners(mode: string): NonNullable<SharedGuard['installed']> {
  const rejection = (reason: unknown): void => {
    // strict: Node raised it as an uncaught exception first (handled there).
    if (mode === 'strict') return;
    const scope = currentScope();
    if (scope !== undefined) {
      scope.onStrayError(reason, 'unhandled rejection');
      return;
    }
    if (process.listenerCount('unhandledRejection') > 1) return;
    if (mode === 'none') return;
    if (mode === 'warn' || mode === 'warn-with-error-code') {
      process.emitWarning(`Unhandled promise rejection: ${inspect(reason)}`, 'UnhandledPromiseRejectionWarning');
      if (mode === 'warn-with-error-code') process.exitCode = 1;
      return;
    }
    // Node's default (--unhandled-rejections=throw): raise it as an uncaught exception.
    process.nextTick(() => {
      throw reason;
    });
  };
  const exception = (error: unknown): void => {
    const scope = currentScope();
    if (scope !== undefined) {
      scope.onStrayError(error, 'uncaught exception');
      return;
    }
    if (process.listenerCount('uncaughtException') > 1) return;
    // Not a handler's: crash as Node would without us.
    uninstall();
    process.nextTick(() => {
      throw error;
    });
  };
  return { rejection, exception };
}

function uninstall(): void {
  const l = shared.installed;
  if (l === undefined) return;
  shared.installed = undefined;
  process.off('unhandledRejection', l.rejection);
  process.off('uncaughtException', l.exception);
}

/** Installs the listeners (once for any number of workers); call release() when done. */
export function acquireProcessGuard(): () => void {
  shared.lookups.set(lookup, (shared.lookups.get(lookup) ?? 0) + 1);
  if (shared.installed === undefined) {
    const l = makeListeners(unhandledRejectionsMode());
    process.on('unhandledRejection', l.rejection);
    process.on('uncaughtException', l.exception);
    shared.installed = l;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (shared.lookups.get(lookup) ?? 0) - 1;
    if (n > 0) shared.lookups.set(lookup, n);
    else shared.lookups.delete(lookup);
    if (shared.lookups.size === 0) uninstall();
  };
}
