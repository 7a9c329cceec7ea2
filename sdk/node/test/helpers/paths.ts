// Where things are, from the compiled test file (build-test/test/helpers/*.js) or the source.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

function findSdkRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'scripts', 'gen-protocol.mjs'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('sdk/node not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

export const SDK_ROOT = findSdkRoot();
export const REPO_ROOT = resolve(SDK_ROOT, '..', '..');
export const FIXTURES = join(REPO_ROOT, 'contract', 'fixtures');

/** The C++ build with `baton` and `batond` (BATON_BUILD_DIR, default build/release), if built. */
export function batonBuild(): { baton: string; batond: string } | undefined {
  const dir = process.env.BATON_BUILD_DIR ?? join(REPO_ROOT, 'build', 'release');
  const baton = join(dir, 'cli', 'baton');
  const batond = join(dir, 'daemon', 'batond');
  return existsSync(baton) && existsSync(batond) ? { baton, batond } : undefined;
}
