// `npm pack` makes an installable tarball: ESM import and CommonJS require both work from an
// installed copy, with type declarations, and nothing but the build and the README is shipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SDK_ROOT } from './helpers/paths.js';

const run = promisify(execFile);

test('npm pack -> install -> import and require', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-pack-'));
  try {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: SDK_ROOT });
    const [info] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
    const files = info.files.map((f) => f.path);
    for (const f of ['package.json', 'README.md', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json']) {
      assert.ok(files.includes(f), `${f} is in the tarball`);
    }
    assert.ok(!files.some((f) => f.startsWith('src/') || f.startsWith('test/') || f.includes('node_modules')), 'no sources, tests or modules');

    // An application that installed the tarball (its dependencies taken from ours: no network).
    const app = join(dir, 'app');
    const modules = join(app, 'node_modules');
    mkdirSync(join(modules, '@baton', 'client'), { recursive: true });
    await run('tar', ['-xzf', join(dir, info.filename), '-C', join(modules, '@baton', 'client'), '--strip-components=1']);
    for (const entry of readdirSync(join(SDK_ROOT, 'node_modules'))) {
      if (entry === '@baton' || entry.startsWith('.')) continue;
      symlinkSync(join(SDK_ROOT, 'node_modules', entry), join(modules, entry));
    }
    writeFileSync(join(app, 'package.json'), '{"name":"app","private":true}');
    const esm = await run(process.execPath, ['--input-type=module', '-e',
      "import { Client, Worker, newTaskId, PROTOCOL_VERSION } from '@baton/client'; console.log(typeof Client, typeof Worker, newTaskId().length, PROTOCOL_VERSION)"], { cwd: app });
    assert.equal(esm.stdout.trim(), 'function function 36 2');
    const cjs = await run(process.execPath, ['-e',
      "const b = require('@baton/client'); console.log(typeof b.Client, typeof b.Worker, b.isUuidV7(b.newTaskId()))"], { cwd: app });
    assert.equal(cjs.stdout.trim(), 'function function true');
    assert.ok(existsSync(join(modules, '@baton', 'client', 'dist', 'esm', 'worker.d.ts')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
