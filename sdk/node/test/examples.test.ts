// The README's quick start is examples/producer.ts and examples/worker.ts (checked here, block for
// file): run them, as a user would, against a real Redis (imported by package name, like an
// installed package).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RedisServer, waitFor } from './helpers/redis_server.js';
import { SDK_ROOT } from './helpers/paths.js';

const run = promisify(execFile);
let server: RedisServer;

before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.close();
});

test('quick start: producer then worker, stopped with SIGTERM', async () => {
  const examples = join(SDK_ROOT, 'build-test', 'examples');
  const { stdout } = await run(process.execPath, [join(examples, 'producer.js'), server.url]);
  const [status, id] = stdout.trim().split(' ');
  assert.equal(status, 'queued');
  const worker = spawn(process.execPath, [join(examples, 'worker.js'), server.url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => worker.once('exit', (code) => r(code)));
  try {
    await waitFor('the email was sent', () => out.includes(`sent welcome to ada@example.com (task ${id}, attempt 1)`));
    worker.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.match(out, /stopped \{"succeeded":1,/);
  } finally {
    worker.kill('SIGKILL');
  }
});

test('the README quick-start blocks are the example files, from their first import', () => {
  const readme = readFileSync(join(SDK_ROOT, 'README.md'), 'utf8');
  for (const name of ['producer', 'worker']) {
    const heading = `(\`examples/${name}.ts\`):\n\n\`\`\`ts\n`;
    const at = readme.indexOf(heading);
    assert.ok(at >= 0, `README has the ${name} block`);
    const block = readme.slice(at + heading.length, readme.indexOf('```', at + heading.length));
    const file = readFileSync(join(SDK_ROOT, 'examples', `${name}.ts`), 'utf8');
    assert.equal(block, file.slice(file.indexOf('import ')), `README block = examples/${name}.ts`);
  }
});
