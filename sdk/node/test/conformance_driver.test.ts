// The Node.js conformance driver (tests/conformance/drivers/node) end to end on a small corpus:
// produce with exact payload bytes and extra fields, consume and report (sha256, value equality
// with the lossless option for numbers beyond 2^53), fail, timeout and idempotency. The delay case
// needs batond's promotion and is left to tests/conformance/run.sh.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RedisServer, waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDead, uniqueNs } from './helpers/baton.js';
import { REPO_ROOT } from './helpers/paths.js';

const run = promisify(execFile);
const DRIVER = join(REPO_ROOT, 'tests', 'conformance', 'drivers', 'node', 'driver');
let server: RedisServer;
let dir: string;

before(async () => {
  server = await RedisServer.start();
  dir = mkdtempSync(join(tmpdir(), 'baton-conf-'));
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('driver produce + consume', async () => {
  const ns = uniqueNs('conf');
  const corpus = join(dir, 'corpus');
  mkdirSync(corpus);
  const payloads: Record<string, string> = {
    cjk: '{"text":"漢字かな交じり文","emoji":"\u{1F468}\u200D\u{1F469}\u200D\u{1F467}","combining":"e\u0301"}',
    big_integers: '{"beyond_2_53": 9007199254740993, "beyond_2_64": 123456789012345678901234567890}',
    numbers: '{"a": 1.10, "b": -0, "c": 1e308}',
  };
  for (const [name, text] of Object.entries(payloads)) writeFileSync(join(corpus, `${name}.json`), text);
  const empty = join(corpus, 'empty.json');
  writeFileSync(empty, '{}');
  const once = '01a22fb8-c14c-7654-86c4-5a231740aeb3';
  const cases = [
    ...Object.keys(payloads).map((name) => ({ case: `payload/${name}`, task_type: 'conf_echo', payload_file: join(corpus, `${name}.json`),
      max_retry: 2, delay_seconds: 0, execution_timeout: name === 'cjk' ? 5 : null, task_id: null,
      extra: { x_conformance_case: `payload/${name}`, x_unknown: { a: 1 } } })),
    { case: 'failure', task_type: 'conf_fail', payload_file: empty, max_retry: 1, delay_seconds: 0, execution_timeout: null, task_id: null, extra: {} },
    { case: 'timeout', task_type: 'conf_sleep', payload_file: join(dir, 'sleep.json'), max_retry: 0, delay_seconds: 0, execution_timeout: 1, task_id: null, extra: {} },
    { case: 'once', task_type: 'conf_once', payload_file: empty, max_retry: 0, delay_seconds: 0, execution_timeout: null, task_id: once, extra: {} },
    { case: 'once', task_type: 'conf_once', payload_file: empty, max_retry: 0, delay_seconds: 0, execution_timeout: null, task_id: once, extra: {} },
  ];
  writeFileSync(join(dir, 'sleep.json'), '{"sleep_ms": 4000}');
  writeFileSync(join(dir, 'cases.jsonl'), cases.map((c) => JSON.stringify(c)).join('\n') + '\n');
  const produced = (await run(DRIVER, ['produce', '--redis', server.url, '--ns', ns, '--cases', join(dir, 'cases.jsonl')])).stdout
    .trim().split('\n').map((l) => JSON.parse(l) as { case: string; task_id: string; status: string });
  assert.deepEqual(produced.map((p) => p.status), ['queued', 'queued', 'queued', 'queued', 'queued', 'queued', 'duplicate']);
  const report = join(dir, 'report.jsonl');
  await run(DRIVER, ['consume', '--redis', server.url, '--ns', ns, '--report', report, '--corpus', corpus, '--seconds', '6']);
  const lines = readFileSync(report, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const [name, text] of Object.entries(payloads)) {
    const l = lines.find((x) => x.case === `payload/${name}`) as Record<string, unknown>;
    assert.equal(l.payload_sha256, createHash('sha256').update(text).digest('hex'), name);
    if (name === 'big_integers') {
      assert.equal(l.payload_value_equal, null);
      assert.equal(l.lossless_value_equal, true);
    } else {
      assert.equal(l.payload_value_equal, true, name);
    }
    assert.deepEqual(l.extra, { x_conformance_case: `payload/${name}`, x_unknown: { a: 1 } });
    assert.equal(l.execution_timeout, name === 'cjk' ? 5 : null);
    assert.equal(l.max_retry, 2);
  }
  assert.equal(lines.filter((l) => l.type === 'conf_once').length, 1);
  const fail = produced.find((p) => p.case === 'failure') as { task_id: string };
  // max_retry 1: a retry is scheduled and promoted only by batond (not running here).
  const failErrors = await waitFor('failure recorded', async () => {
    const e = await attemptErrors(server.redis(), ns, fail.task_id);
    return e.length > 0 ? e : undefined;
  });
  assert.match(failErrors[0]?.stack ?? '', /conf_fail: attempt 1 fails on purpose\n\s+at /);
  const sleep = produced.find((p) => p.case === 'timeout') as { task_id: string };
  assert.ok(await isDead(server.redis(), ns, 'conf_sleep', sleep.task_id));
  assert.equal((await attemptErrors(server.redis(), ns, sleep.task_id))[0]?.kind, 'timeout');
});
