// Starts and stops the real servers of the console's browser tests: redis-server, `baton init`,
// batond, baton-collector, baton-console and the Python worker, each on a free loopback port,
// with its output in a log file. Every child is remembered and killed by stopAll() (SIGTERM,
// then SIGKILL after a grace), and by a synchronous SIGKILL on process exit should the test
// runner end without calling it.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '../../..');
export const BUILD = path.resolve(process.env.BATON_BUILD_DIR || path.join(REPO, 'build/release'));
export const OUTPUT = path.join(
  path.resolve(process.env.BATON_TEST_OUTPUT || path.join(REPO, 'build/test-output')), 'console');

export const BIN = {
  baton: path.join(BUILD, 'cli/baton'),
  batond: path.join(BUILD, 'daemon/batond'),
  collector: path.join(BUILD, 'collector/baton-collector'),
  console: path.join(BUILD, 'console/baton-console'),
};

// The built front end: the build's console-web (docs/console.md, `--web-dir`), or
// BATON_CONSOLE_WEB_DIR.
export function webDir() {
  if (process.env.BATON_CONSOLE_WEB_DIR) return path.resolve(process.env.BATON_CONSOLE_WEB_DIR);
  return path.join(BUILD, 'console-web');
}

const children = new Set();

process.on('exit', () => {
  for (const c of children) {
    try { c.proc.kill('SIGKILL'); } catch { /* already gone */ }
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { process.exit(130); });
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// A port that was free a moment ago on 127.0.0.1 (the servers that take port 0 themselves are
// given 0 instead).
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export function makeTempDir(prefix = 'baton-console-browser-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function requireFile(file, hint) {
  if (!fs.existsSync(file)) {
    throw new Error(`${file} not found${hint ? ` (${hint})` : ''}`);
  }
}

// One child process whose stdout and stderr go to LOGDIR/NAME.log and are kept in memory to
// wait for a line. waitFor(regex) resolves with the match, or rejects when the process exits or
// the time runs out (the error carries the end of the log).
export class Child {
  constructor(name, cmd, args, { env, cwd, logDir }) {
    this.name = name;
    this.output = '';
    this.exited = null;
    this.logFile = path.join(logDir, `${name}.log`);
    this.log = fs.createWriteStream(this.logFile);
    this.log.write(`$ ${cmd} ${args.map((a) => JSON.stringify(a)).join(' ')}\n`);
    this.proc = spawn(cmd, args, {
      env: { ...process.env, ...env },
      cwd: cwd || HERE,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.waiters = [];
    const onData = (chunk) => {
      const s = chunk.toString('utf8');
      this.output += s;
      this.log.write(s);
      this.check();
    };
    this.proc.stdout.on('data', onData);
    this.proc.stderr.on('data', onData);
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        children.delete(this);
        this.log.write(`\n[exited: code ${code} signal ${signal}]\n`);
        for (const w of this.waiters) w.reject(this.failure(`exited (code ${code}, signal ${signal})`));
        this.waiters = [];
        resolve(this.exited);
      });
      this.proc.on('error', (err) => {
        this.exited = { code: null, signal: null, error: err };
        children.delete(this);
        for (const w of this.waiters) w.reject(this.failure(`could not start: ${err.message}`));
        this.waiters = [];
        resolve(this.exited);
      });
    });
    children.add(this);
  }

  failure(what) {
    const tail = this.output.split('\n').slice(-30).join('\n');
    return new Error(`${this.name} ${what}; log ${this.logFile}:\n${tail}`);
  }

  check() {
    for (const w of [...this.waiters]) {
      const m = this.output.match(w.regex);
      if (m) {
        clearTimeout(w.timer);
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  }

  waitFor(regex, timeoutMs = 15000) {
    const m = this.output.match(regex);
    if (m) return Promise.resolve(m);
    if (this.exited) return Promise.reject(this.failure('exited'));
    return new Promise((resolve, reject) => {
      const w = { regex, resolve, reject };
      w.timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(this.failure(`did not print ${regex} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  async stop(graceMs = 5000) {
    if (this.exited) return this.exited;
    try { this.proc.kill('SIGTERM'); } catch { /* gone */ }
    const timer = setTimeout(() => {
      try { this.proc.kill('SIGKILL'); } catch { /* gone */ }
    }, graceMs);
    const res = await this.exitPromise;
    clearTimeout(timer);
    await new Promise((r) => this.log.end(r));
    return res;
  }
}

export async function stopAll() {
  // Reverse start order: the worker and the console before the stores they use.
  const list = [...children].reverse();
  for (const c of list) {
    await c.stop();
  }
}

// Runs a command to completion; throws with its output when it fails.
export function run(cmd, args, { input, env } = {}) {
  const res = spawnSync(cmd, args, {
    input,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30000,
  });
  if (res.error) throw new Error(`${cmd} ${args.join(' ')}: ${res.error.message}`);
  if (res.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${res.status}:\n${res.stdout}\n${res.stderr}`);
  }
  return res.stdout;
}

// The whole deployment of one test run.
export class Stack {
  constructor() {
    this.tmp = makeTempDir();
    this.logDir = path.join(OUTPUT, 'logs');
    fs.mkdirSync(this.logDir, { recursive: true });
    this.marker = path.join(this.tmp, 'flaky-fixed');
    this.storeUrl = `sqlite://${path.join(this.tmp, 'stats.db')}`;
  }

  child(name, cmd, args, opts = {}) {
    return new Child(name, cmd, args, { logDir: this.logDir, ...opts });
  }

  async startRedis() {
    const port = await freePort();
    const dir = path.join(this.tmp, 'redis');
    fs.mkdirSync(dir);
    this.redis = this.child('redis', 'redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--protected-mode', 'yes',
    ]);
    await this.redis.waitFor(/Ready to accept connections/);
    this.redisUrl = `redis://127.0.0.1:${port}`;
    return this.redisUrl;
  }

  batonInit() {
    return run(BIN.baton, ['--redis', this.redisUrl, 'init']);
  }

  async startBatond() {
    requireFile(BIN.batond, 'build the project first');
    this.batond = this.child('batond', BIN.batond, ['--redis-url', this.redisUrl]);
    await this.batond.waitFor(/batond running/);
  }

  async startCollector() {
    requireFile(BIN.collector, 'build the project first');
    this.collector = this.child('collector', BIN.collector, [
      '--redis', this.redisUrl, '--store', this.storeUrl, '--listen', '127.0.0.1:0',
      '--sample-interval-ms', '500', '--discovery-interval-ms', '200', '--block-ms', '200',
      '--name', 'collector-browser-test',
    ]);
    const m = await this.collector.waitFor(/HTTP API and \/metrics on (http:\/\/\S+)/);
    this.collectorUrl = m[1];
    await this.collector.waitFor(/reading events into SQLite/);
    return this.collectorUrl;
  }

  pythonPath() {
    if (!this.python) {
      const out = run('bash', [path.join(REPO, 'sdk/python/scripts/venv.sh')]);
      this.python = out.trim().split('\n').pop();
    }
    return this.python;
  }

  async startWorker() {
    this.worker = this.child('worker', this.pythonPath(),
      [path.join(HERE, 'worker.py'), this.redisUrl, this.marker]);
    await this.worker.waitFor(/worker ready/);
  }

  // Writes the users file: admin, operator and viewer, each with the password `<name>-pw-1`,
  // hashed by `baton-console hash-password`.
  makeUsers() {
    requireFile(BIN.console, 'the console server is not built');
    const users = [];
    this.passwords = {};
    for (const [name, role] of [['admin', 'admin'], ['operator', 'operator'], ['viewer', 'viewer']]) {
      const password = `${name}-pw-1`;
      const hash = run(BIN.console, ['hash-password'], { input: `${password}\n` }).trim();
      if (!hash.startsWith('$argon2id$')) throw new Error(`hash-password printed ${JSON.stringify(hash)}`);
      users.push({ name, role, password_hash: hash });
      this.passwords[name] = password;
    }
    this.usersFile = path.join(this.tmp, 'users.json');
    fs.writeFileSync(this.usersFile, JSON.stringify({ users }, null, 2));
    return this.usersFile;
  }

  async startConsole(name = 'console', extra = []) {
    requireFile(BIN.console, 'the console server is not built');
    const web = webDir();
    requireFile(path.join(web, 'index.html'), 'the front end is not built (BATON_CONSOLE_WEB_DIR)');
    const c = this.child(name, BIN.console, [
      '--redis', this.redisUrl, '--store', this.storeUrl, '--users', this.usersFile,
      '--listen', '127.0.0.1:0', '--web-dir', web, '--live-interval-ms', '500', ...extra,
    ]);
    const m = await c.waitFor(/baton-console listening on (http:\/\/\S+)/);
    c.url = m[1].replace(/\/$/, '');
    return c;
  }

  // `baton enqueue`; returns the parsed --json answer.
  enqueue(type, payload, { maxRetry = 0, ns = 'shop', extraArgs = [] } = {}) {
    const out = run(BIN.baton, [
      '--redis', this.redisUrl, '--json', 'enqueue', '--ns', ns, '--type', type,
      '--payload', typeof payload === 'string' ? payload : JSON.stringify(payload),
      '--max-retry', String(maxRetry), ...extraArgs,
    ]);
    const res = JSON.parse(out);
    if (!res.task_id) throw new Error(`enqueue printed ${out}`);
    return res;
  }

  // `baton --json task show`: the live state of a task in Redis.
  taskState(id, ns = 'shop') {
    const res = spawnSync(BIN.baton, ['--redis', this.redisUrl, '--json', 'task', 'show', id, '--ns', ns],
      { encoding: 'utf8' });
    if (res.status !== 0) return null;
    return JSON.parse(res.stdout);
  }

  async stop() {
    await stopAll();
  }

  cleanup() {
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

// Polls fn until it returns a truthy value; throws with the last value or error after timeoutMs.
export async function waitUntil(what, fn, { timeoutMs = 20000, intervalMs = 200 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${detail})`);
    }
    await sleep(intervalMs);
  }
}

export { execFileSync };
