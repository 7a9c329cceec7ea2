// Where the worker's warnings go. The application owns its output: pass `logger` to route them
// (pino, winston and console all fit), or `logger: false` to drop them; the default writes one
// line per message to stderr through console.warn / console.error.
export interface Logger {
  warn(message: string, details?: Record<string, unknown>): void;
  error(message: string, details?: Record<string, unknown>): void;
}

export const consoleLogger: Logger = {
  warn: (message, details) => console.warn(`baton: ${message}`, ...(details ? [details] : [])),
  error: (message, details) => console.error(`baton: ${message}`, ...(details ? [details] : [])),
};

export const silentLogger: Logger = { warn: () => undefined, error: () => undefined };
