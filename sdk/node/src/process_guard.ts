// Catches failures that escape a handler's promise: a rejection the handler forgot to await, an
// exception thrown from a timer or callback it started. Node would crash the process on either
// (the gateway's HTTP server with it). While a worker runs, listeners on the process look up the
// attempt the failing code belongs to (AsyncLocalStorage follows promises, timers and callbacks;
// Node enters the rejected promise's context before emitting unhandledRejection) and fail that
// attempt instead.
//
// A failure that belongs to no attempt is not ours: when the application has its own listener
// it decides; otherwise we restore Node's default (crash with the error), so installing a worker
// never silences the application's own bugs.
import { attemptScope } from './attempt.js';

let users = 0;

function onUnhandledRejection(reason: unknown): void {
  const scope = attemptScope.getStore();
  if (scope !== undefined) {
    scope.onStrayError(reason, 'unhandled rejection');
    return;
  }
  if (process.listenerCount('unhandledRejection') > 1) return;
  // Node's default (--unhandled-rejections=throw): raise it as an uncaught exception.
  process.nextTick(() => {
    throw reason;
  });
}

function onUncaughtException(error: unknown): void {
  const scope = attemptScope.getStore();
  if (scope !== undefined) {
    scope.onStrayError(error, 'uncaught exception');
    return;
  }
  if (process.listenerCount('uncaughtException') > 1) return;
  // Not a handler's: crash as Node would without us.
  uninstall(true);
  process.nextTick(() => {
    throw error;
  });
}

function uninstall(force: boolean): void {
  if (force) users = 0;
  process.off('unhandledRejection', onUnhandledRejection);
  process.off('uncaughtException', onUncaughtException);
}

/** Installs the listeners (once for any number of workers); call release() when done. */
export function acquireProcessGuard(): () => void {
  if (users === 0) {
    process.on('unhandledRejection', onUnhandledRejection);
    process.on('uncaughtException', onUncaughtException);
  }
  users++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (users > 0 && --users === 0) uninstall(false);
  };
}
