// Worker threads (registerThreaded) from the CommonJS build, and a handler module that cannot be
// loaded: start() says so instead of starting threads that die and are replaced forever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatonError } from '../src/index.js';
import { waitFor, sleep } from './helpers/redis_server.js';
import { attemptErrors, isDead, isDone, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';
import { SDK_ROOT } from './helpers/paths.js';

const env = serverAndClient();

test('CommonJS: require("@baton/client") runs threaded handlers, successes and failures', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-cjs-'));
  const ns = uniqueNs();
  const handler = join(dir, 'square.cjs');
  writeFileSync(handler, `module.exports = function square(task) {
  if (task.payload.fail) throw new Error('cjs boom');
  if (task.payload.n * task.payload.n !== 49) throw new Error('bad payload');
};\n`);
  const app = join(dir, 'app.cjs');
  writeFileSync(app, `const { Worker, silentLogger } = require(${JSON.stringify(join(SDK_ROOT, 'dist', 'cjs', 'index.js'))});
const [url, ns, handler] = process.argv.slice(2);
const worker = new Worker({ redis: url, logger: silentLogger, blockMs: 200 })
  .registerThreaded(ns, 'cpu', handler, { threads: 2 });
worker.start().then(() => console.log('ready'), (e) => { console.log(String(e)); process.exit(2); });
process.on('SIGTERM', () => worker.stop().then(() => process.exit(0)));
`);
  const child = spawn(process.execPath, [app, env.server.url, ns, handler], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  try {
    const ok = await env.client.enqueue(ns, 'cpu', { n: 7 });
    const bad = await env.client.enqueue(ns, 'cpu', { fail: true }, { maxRetry: 0 });
    const r = env.server.redis();
    await waitFor(`both settled (child: ${output})`, async () => (await isDone(r, ns, ok.taskId)) && (await isDead(r, ns, 'cpu', bad.taskId)));
    const [failure] = await attemptErrors(r, ns, bad.taskId);
    assert.equal(failure?.error, 'Error: cjs boom');
    assert.match(failure?.stack ?? '', /square\.cjs/);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, output);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a threaded handler module that cannot be loaded: start() rejects naming it, no thread respawn loop', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-badmod-'));
  try {
    const noDefault = join(dir, 'no_default.mjs');
    writeFileSync(noDefault, 'export const notAHandler = 1;\n');
    const throwsOnLoad = join(dir, 'throws.mjs');
    writeFileSync(throwsOnLoad, "throw new Error('config missing');\n");
    const cases: [string, RegExp][] = [
      [join(dir, 'missing.mjs'), /missing\.mjs failed to load: Error: Cannot find module/],
      [noDefault, /exports no default \(or "handler"\) function/],
      [throwsOnLoad, /throws\.mjs failed to load: Error: config missing/],
    ];
    for (const [module, message] of cases) {
      const warnings: string[] = [];
      const worker = quietWorker(env.server.url).registerThreaded(uniqueNs(), 'cpu', module, { threads: 2 });
      worker.on('warning', (m: string) => warnings.push(m));
      await assert.rejects(worker.start(), (e: unknown) => {
        assert.ok(e instanceof BatonError);
        assert.equal(e.code, 'invalid_argument');
        assert.equal(e.field, 'module');
        assert.match(e.message, message);
        return true;
      });
      const seen = warnings.length;
      await sleep(500);
      assert.equal(warnings.length, seen, `no more threads die after start() failed: ${warnings.join(' | ')}`);
      assert.ok(seen <= 1, `one report, not one per respawn: ${warnings.join(' | ')}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
