// A Node child process running a compiled test fixture, with its stdout read as JSON lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import { waitFor } from './redis_server.js';

const FIXTURES_JS = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

export class Child {
  readonly proc: ChildProcess;
  readonly lines: Record<string, unknown>[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(fixture: string, args: string[]) {
    this.proc = spawn(process.execPath, [join(FIXTURES_JS, fixture), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    createInterface({ input: this.proc.stdout as NodeJS.ReadableStream }).on('line', (l) => {
      try {
        this.lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        this.lines.push({ text: l });
      }
    });
    this.proc.stderr?.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** The first line that has `key`, waiting for it. */
  line(key: string, timeoutMs = 20000): Promise<Record<string, unknown>> {
    return waitFor(`a "${key}" line from the child (stderr: ${this.stderr.slice(-500)})`,
      () => this.lines.find((l) => key in l), timeoutMs);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.alive) this.proc.kill(signal);
  }
}
