// Real-browser tests of baton-console (docs/console.md): Playwright drives Debian's Chromium,
// headless, against real servers started here (harness.mjs): redis-server, `baton init`, batond,
// baton-collector on a SQLite store, baton-console serving the built front end, and the Python
// worker of worker.py. Tasks are produced with the `baton` CLI. Nothing is mocked.
//
// The tests share one deployment and run in order: the replay of test 4 is what test 10 finds in
// the audit log. Run with run.sh (or `node --test --test-concurrency=1 console.test.mjs`).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

import { BIN, OUTPUT, Stack, run, sleep, waitUntil } from './harness.mjs';

const CHROMIUM = process.env.BATON_CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const FLAKY_MESSAGE = 'flaky task failed on purpose (no marker file)';
const XSS_SCRIPT = '<script>window.__xss=1</script>';
const XSS_ATTR = '"><img src=x onerror="window.__xss=2">';
const XSS_ERROR = '<b>bold</b><img src=x onerror=alert(1)>';
const UI_TIMEOUT = 10000;

let stack;
let server; // the console
let browser;
const okIds = [];
const flakyIds = [];
const ids = {}; // replayed, xss, viewerTarget
const screenshotDir = OUTPUT;

// ---------------------------------------------------------------------------------------------
// helpers

async function newSession(name) {
  const context = await browser.newContext({
    baseURL: server.url,
    viewport: { width: 1280, height: 900 },
  });
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT);
  page.dialogs = [];
  page.errors = [];
  page.on('dialog', async (d) => {
    page.dialogs.push({ type: d.type(), message: d.message() });
    // A confirm() of an action is accepted; the XSS test fails on any dialog.
    await d.accept().catch(() => {});
  });
  page.on('pageerror', (err) => page.errors.push(err.message));
  page.label = name;
  return { context, page };
}

async function login(page, user, password = stack.passwords[user], base = server.url) {
  await page.goto(`${base}/`);
  await page.getByTestId('login-user').fill(user);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await assert.doesNotReject(
    page.getByTestId('session-user').filter({ hasText: user }).waitFor(),
    `after logging in as ${user}, session-user shows ${user}`);
}

// fetch() from inside the page: the session cookie and the page's own Origin go along, as they
// would from the front end itself.
async function api(page, method, url, { body, csrf } = {}) {
  return page.evaluate(async ({ method, url, body, csrf }) => {
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (csrf !== undefined) headers['X-CSRF-Token'] = csrf;
    const res = await fetch(url, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, json, text };
  }, { method, url, body, csrf });
}

async function session(page) {
  const res = await api(page, 'GET', '/api/session');
  assert.equal(res.status, 200, `GET /api/session: ${res.text}`);
  return res.json;
}

function shopOf(overview) {
  return (overview.namespaces || []).find((n) => n.namespace === 'shop');
}

async function screenshot(page, name) {
  fs.mkdirSync(screenshotDir, { recursive: true });
  const file = path.join(screenshotDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  const size = fs.statSync(file).size;
  assert.ok(size > 1000, `${file} is a real PNG (${size} bytes)`);
  return file;
}

// Runs a test body with a fresh browser context; on failure saves a screenshot of the page
// (failure-<name>.png) next to the others before rethrowing.
async function withPage(name, fn) {
  const { context, page } = await newSession(name);
  try {
    await fn(page, context);
  } catch (err) {
    await screenshot(page, `failure-${name}`).catch(() => {});
    throw err;
  } finally {
    await context.close();
  }
}

// The numbers in a text as the front end formats them (en-US: "1,234", "70.0%", "2.8 ms").
function numbersIn(text) {
  return (text.match(/-?\d[\d,]*(?:\.\d+)?/g) || []).map((n) => Number(n.replace(/,/g, '')));
}

async function openTask(page, id, ns = 'shop') {
  await page.goto(`${server.url}/#/task/${ns}/${id}`);
  await page.getByTestId('task-state').waitFor();
}

// Waits until the task page (reloaded every try) shows a state containing `want`. A goto to the
// URL the page already shows changes no hash, so the app would not render again: load a blank
// page first.
async function waitTaskPageState(page, id, want, timeoutMs = 20000) {
  return waitUntil(`task ${id} page to show state ${want}`, async () => {
    await page.goto('about:blank');
    await openTask(page, id);
    const text = (await page.getByTestId('task-state').textContent()).trim();
    return text.toLowerCase().includes(want) ? text : null;
  }, { timeoutMs, intervalMs: 500 });
}

function redisState(id) {
  const t = stack.taskState(id);
  return t && t.state;
}

// ---------------------------------------------------------------------------------------------

describe('baton-console in a real browser', () => {
  before(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
    fs.mkdirSync(screenshotDir, { recursive: true });
    stack = new Stack();
    await stack.startRedis();
    stack.batonInit();
    await stack.startBatond();
    await stack.startCollector();
    await stack.startWorker();
    stack.makeUsers();
    run(BIN.baton, ['--redis', stack.redisUrl, 'cron', 'add', 'nightly-report', '--schedule',
      '30 2 * * *', '--tz', 'Europe/Berlin', '--ns', 'shop', '--type', 'ok',
      '--payload', '{"report":"nightly"}']);
    server = await stack.startConsole();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });

    // What the workers will do: 7 successes and 3 deaths (max_retry 0, no marker file yet).
    for (let i = 0; i < 7; i++) okIds.push(stack.enqueue('ok', { order: i }).task_id);
    for (let i = 0; i < 3; i++) flakyIds.push(stack.enqueue('flaky', { order: 100 + i }).task_id);
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await stack?.stop();
    stack?.cleanup();
  });

  it('1. logs in as admin; a wrong password shows an error', async () => {
    await withPage('login', async (page) => {
      const resp = await page.goto(`${server.url}/`);
      assert.equal(resp.status(), 200);
      const h = resp.headers();
      const csp = h['content-security-policy'] || '';
      for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"]) {
        assert.ok(csp.includes(d), `Content-Security-Policy has ${d}: ${csp}`);
      }
      assert.ok(!/unsafe-inline|unsafe-eval/.test(csp), `no unsafe-* in the CSP: ${csp}`);
      assert.equal(h['x-frame-options'], 'DENY');
      assert.equal(h['x-content-type-options'], 'nosniff');
      assert.equal(h['referrer-policy'], 'no-referrer');
      await page.getByTestId('login-user').waitFor();
      await screenshot(page, 'login');

      await page.getByTestId('login-user').fill('admin');
      await page.getByTestId('login-password').fill('not-the-password');
      await page.getByTestId('login-submit').click();
      const error = page.getByTestId('login-error');
      await error.waitFor();
      assert.match(await error.textContent(), /wrong user name or password/, 'login-error has the message');
      assert.equal(await page.getByTestId('session-user').count(), 0, 'no session after a wrong password');
      const s = await api(page, 'GET', '/api/session');
      assert.equal(s.status, 401, `GET /api/session without a session: ${s.text}`);

      await page.getByTestId('login-password').fill(stack.passwords.admin);
      await page.getByTestId('login-submit').click();
      await page.getByTestId('session-user').filter({ hasText: 'admin' }).waitFor();
      const me = await session(page);
      const sessionResp = await page.request.get('/api/session');
      assert.match(sessionResp.headers()['cache-control'] || '', /no-store/, 'the API answers Cache-Control: no-store');
      assert.equal(me.user, 'admin');
      assert.equal(me.role, 'admin');
      assert.equal(me.read_only, false);
      assert.equal(me.can_act, true);
      const cookies = await page.context().cookies();
      const cookie = cookies.find((c) => c.name === 'baton_session');
      assert.ok(cookie, 'the baton_session cookie is set');
      assert.equal(cookie.httpOnly, true, 'baton_session is HttpOnly');
      assert.equal(cookie.sameSite, 'Strict', 'baton_session is SameSite=Strict');
    });
  });

  it('2. the overview shows what the workers did', async () => {
    await withPage('overview', async (page) => {
      await login(page, 'admin');
      const overview = await waitUntil('the collector to store 7 successes and 3 deaths', async () => {
        const res = await api(page, 'GET', '/api/overview');
        if (res.status !== 200) return null;
        const shop = shopOf(res.json);
        return shop && shop.today.succeeded === 7 && shop.today.dead === 3 ? res.json : null;
      });
      const today = shopOf(overview).today;
      // The JSON agrees with what was enqueued and what the worker did.
      assert.equal(today.enqueued, 10, 'enqueued today');
      assert.equal(today.started, 10, 'started today');
      assert.equal(today.succeeded, 7, 'succeeded today');
      assert.equal(today.dead, 3, 'dead today');
      assert.equal(today.failed, 0, 'no retries (max_retry 0)');
      assert.ok(Math.abs(today.success_rate - 0.7) < 1e-9, `success_rate ${today.success_rate}`);

      await page.goto(`${server.url}/#/overview`);
      const ns = page.getByTestId('overview-ns-shop');
      await ns.waitFor();
      // enqueued = started = succeeded + dead = 10 here, whichever "today's count" the page shows.
      const count = ns.getByTestId('overview-today-count');
      await assert.doesNotReject(waitUntil('overview-today-count to show 10', async () =>
        numbersIn(await count.textContent()).includes(10)), 'overview-today-count shows 10');
      const rateText = await ns.getByTestId('overview-success-rate').textContent();
      const rate = numbersIn(rateText)[0];
      assert.ok(rateText.includes('%') ? Math.abs(rate - 70) < 0.051 : Math.abs(rate - 0.7) < 0.0051,
        `overview-success-rate shows 70% (got ${JSON.stringify(rateText)})`);
      const meanText = await ns.getByTestId('overview-mean-ms').textContent();
      const mean = numbersIn(meanText)[0];
      // The JSON's mean can move only with new runs; none ran since it was read.
      assert.ok(Number.isFinite(mean) && Math.abs(mean - today.mean_run_ms) <= Math.max(0.51, today.mean_run_ms * 0.01),
        `overview-mean-ms shows ${today.mean_run_ms} (got ${JSON.stringify(meanText)})`);
      await screenshot(page, 'overview');
    });
  });

  it('3. a failed task shows its Python traceback', async () => {
    await withPage('failed', async (page) => {
      await login(page, 'admin');
      const id = flakyIds[0];
      await page.goto(`${server.url}/#/failed`);
      const row = page.locator(`[data-testid="failed-row"][data-task-id="${id}"]`);
      await row.waitFor();
      assert.equal(await page.locator('[data-testid="failed-row"]').count() >= 3, true, 'the 3 dead tasks are listed');
      for (const other of flakyIds) {
        assert.equal(await page.locator(`[data-testid="failed-row"][data-task-id="${other}"]`).count(), 1,
          `dead task ${other} is listed once`);
      }
      for (const okId of okIds) {
        assert.equal(await page.locator(`[data-testid="failed-row"][data-task-id="${okId}"]`).count(), 0,
          `succeeded task ${okId} is not in the failed list`);
      }
      assert.ok((await row.textContent()).includes(FLAKY_MESSAGE), 'the row shows the error');
      await screenshot(page, 'failed');

      // Open the task from its row (a link in it, else the row itself).
      const link = row.locator('a');
      if (await link.count()) await link.first().click();
      else await row.click();
      await page.waitForURL((u) => u.hash === `#/task/shop/${id}`);
      await page.getByTestId('task-state').filter({ hasText: /dead/i }).waitFor();
      const stackEl = page.getByTestId('task-error-stack').first();
      await stackEl.waitFor();
      const tag = await stackEl.evaluate((el) => (el.tagName === 'PRE' || el.querySelector('pre') ? 'PRE' : el.tagName));
      assert.equal(tag, 'PRE', 'the stack is in a <pre>');
      const text = await stackEl.textContent();
      assert.ok(text.includes('Traceback (most recent call last)'), `the stack is a Python traceback: ${text}`);
      assert.ok(text.includes(`RuntimeError: ${FLAKY_MESSAGE}`), 'the stack ends with the exception');
      assert.ok(text.includes('in check_inventory'), 'the stack names the frame that raised');
      assert.ok(await stackEl.isVisible(), 'the stack is visible');
      assert.ok(await page.getByTestId('timeline-row').count() >= 3, 'the timeline lists queued, active, dead');
      await screenshot(page, 'task');
    });
  });

  it('4. Replay from the UI, and the worker completes the task', async () => {
    const id = flakyIds[0];
    ids.replayed = id;
    fs.writeFileSync(stack.marker, 'fixed\n');
    try {
      await withPage('replay', async (page) => {
        await login(page, 'admin');
        await openTask(page, id);
        assert.match(await page.getByTestId('task-state').textContent(), /dead/i);
        // The actions of a dead task are on its row of the failed list (and on the task page
        // when the front end puts them there too).
        let button = page.getByTestId('replay-button');
        if (await button.count() === 0) {
          await page.getByTestId('nav-failed').click();
          const row = page.locator(`[data-testid="failed-row"][data-task-id="${id}"]`);
          await row.waitFor();
          button = row.getByTestId('replay-button');
        }
        await button.click();
        const toast = page.getByTestId('toast').filter({ hasText: id });
        await toast.waitFor();
        assert.notEqual(await toast.getAttribute('data-kind'), 'error', `the toast: ${await toast.textContent()}`);
        await waitUntil(`task ${id} done in Redis`, () => redisState(id) === 'done');
        const shown = await waitTaskPageState(page, id, 'done');
        assert.match(shown, /done/i);
        await waitUntil('the collector to store the replay and the second run', async () => {
          const r = await api(page, 'GET', `/api/tasks/shop/${id}`);
          const t = r.json && r.json.timeline;
          return t && t.state === 'done' && t.events.some((e) => e.from === 'dead' && e.to === 'queued');
        });
        await page.reload();
        await page.getByTestId('task-state').filter({ hasText: /done/i }).waitFor();
        const rows = await page.getByTestId('timeline-row').allTextContents();
        assert.ok(rows.some((r) => /dead\s*→\s*queued/.test(r)), `the timeline shows the replay: ${rows.join(' | ')}`);
        assert.ok(rows.some((r) => /active\s*→\s*done/.test(r)), `the timeline shows the success: ${rows.join(' | ')}`);
      });
    } finally {
      fs.rmSync(stack.marker, { force: true });
    }
  });

  it('5. an XSS payload and error render as text', async () => {
    const payload = { a: XSS_SCRIPT, b: XSS_ATTR, message: XSS_ERROR };
    // The producer names itself in a header (shown as "enqueued by"), with markup in it too.
    const producer = `order-service <img src=x onerror="window.__xss=3">`;
    const id = stack.enqueue('flaky', payload, {
      extraArgs: ['--extra', JSON.stringify({ headers: { producer } })],
    }).task_id;
    ids.xss = id;
    await withPage('xss', async (page) => {
      await login(page, 'admin');
      await waitUntil(`task ${id} dead in the collector's store`, async () => {
        const r = await api(page, 'GET', `/api/tasks/shop/${id}`);
        return r.status === 200 && r.json.timeline && r.json.timeline.state === 'dead'
          && r.json.timeline.events.some((e) => e.stack);
      });
      await openTask(page, id);
      const payloadEl = page.getByTestId('task-payload');
      await payloadEl.waitFor();
      const payloadText = await payloadEl.textContent();
      assert.ok(payloadText.includes(XSS_SCRIPT), `the payload shows ${XSS_SCRIPT} as text: ${payloadText}`);
      // As JSON text the quotes of a string are escaped; either spelling is the literal text.
      assert.ok(payloadText.includes(XSS_ATTR) || payloadText.includes(JSON.stringify(XSS_ATTR).slice(1, -1)),
        `the payload shows ${XSS_ATTR} as text: ${payloadText}`);
      assert.ok(await payloadEl.getByText('window.__xss=1', { exact: false }).first().isVisible(), 'visible');
      const producerEl = page.getByTestId('task-producer');
      assert.equal((await producerEl.textContent()).trim().endsWith(producer), true,
        `"enqueued by" shows the producer header as text: ${await producerEl.textContent()}`);
      assert.equal(await page.locator('[data-testid="task-producer"] img').count(), 0, 'no element from a header');
      const stackEl = page.getByTestId('task-error-stack').first();
      await stackEl.waitFor();
      const stackText = await stackEl.textContent();
      assert.ok(stackText.includes(`RuntimeError: ${XSS_ERROR}`), `the stack shows the markup as text: ${stackText}`);
      assert.equal(await page.locator('[data-testid="task-payload"] img, [data-testid="task-payload"] script').count(), 0,
        'no element made from the payload');
      assert.equal(await page.locator('[data-testid="task-error-stack"] img, [data-testid="task-error-stack"] b').count(), 0,
        'no element made from the stack');
      await screenshot(page, 'task-xss');

      await page.goto(`${server.url}/#/failed`);
      const row = page.locator(`[data-testid="failed-row"][data-task-id="${id}"]`);
      await row.waitFor();
      assert.ok((await row.textContent()).includes(XSS_ERROR), 'the failed row shows the error as text');
      assert.equal(await row.locator('img, b, script').count(), 0, 'no element made from the error in the row');

      await sleep(500); // an <img onerror> would have fired by now
      assert.equal(await page.evaluate(() => typeof window.__xss), 'undefined', 'no injected script ran');
      assert.equal(await page.evaluate(() => document.querySelectorAll('img[src="x"]').length), 0,
        'no injected <img> anywhere');
      assert.deepEqual(page.dialogs, [], 'no dialog fired');
    });
  });

  it('6. a viewer cannot replay', async () => {
    const id = flakyIds[1];
    await withPage('viewer', async (page) => {
      await login(page, 'viewer');
      const me = await session(page);
      assert.equal(me.role, 'viewer');
      assert.equal(me.can_act, false);
      await openTask(page, id);
      assert.match(await page.getByTestId('task-state').textContent(), /dead/i);
      await page.getByTestId('task-error-stack').first().waitFor(); // the page is drawn
      assert.equal(await page.getByTestId('replay-button').count(), 0, 'no replay button for a viewer');
      assert.equal(await page.getByTestId('edit-replay-button').count(), 0, 'no edit-and-replay button');
      assert.equal(await page.getByTestId('delete-button').count(), 0, 'no delete button');
      await page.getByTestId('nav-failed').click();
      await page.locator(`[data-testid="failed-row"][data-task-id="${id}"]`).waitFor();
      assert.equal(await page.getByTestId('replay-button').count(), 0, 'no replay button in the failed list');
      assert.equal(await page.getByTestId('edit-replay-button').count(), 0, 'no edit-and-replay button in the list');
      assert.equal(await page.getByTestId('delete-button').count(), 0, 'no delete button in the list');
      assert.equal(await page.getByTestId('bulk-replay').count(), 0, 'no bulk replay for a viewer');

      const before = stack.taskState(id);
      const res = await api(page, 'POST', '/api/dead/replay', { body: { ns: 'shop', id }, csrf: me.csrf });
      assert.equal(res.status, 403, `viewer's replay: ${res.text}`);
      assert.ok(res.json && typeof res.json.error === 'string', 'the refusal is {"error": ...}');
      const del = await api(page, 'POST', '/api/dead/delete', { body: { ns: 'shop', id }, csrf: me.csrf });
      assert.equal(del.status, 403, `viewer's delete: ${del.text}`);
      const audit = await api(page, 'GET', '/api/audit');
      assert.equal(audit.status, 403, `viewer reading the audit log: ${audit.text}`);
      const after = stack.taskState(id);
      assert.equal(after.state, 'dead', 'the task is still dead');
      assert.equal(after.events.length, before.events.length, 'nothing happened to the task');
    });
  });

  it('7. a POST without the CSRF token is refused, even for admin', async () => {
    const id = flakyIds[1];
    await withPage('csrf', async (page) => {
      await login(page, 'admin');
      const me = await session(page);
      assert.ok(me.csrf, 'the session has a csrf token');
      const before = stack.taskState(id);

      const none = await api(page, 'POST', '/api/dead/replay', { body: { ns: 'shop', id } });
      assert.equal(none.status, 403, `replay without X-CSRF-Token: ${none.text}`);
      const wrong = await api(page, 'POST', '/api/dead/replay', { body: { ns: 'shop', id }, csrf: `${me.csrf}x` });
      assert.equal(wrong.status, 403, `replay with a wrong X-CSRF-Token: ${wrong.text}`);
      const del = await api(page, 'POST', '/api/dead/delete', { body: { ns: 'shop', id } });
      assert.equal(del.status, 403, `delete without X-CSRF-Token: ${del.text}`);

      // The control: the same session with its token may POST (preview changes nothing).
      const preview = await api(page, 'POST', '/api/dead/preview', { body: { ns: 'shop', type: 'flaky' }, csrf: me.csrf });
      assert.equal(preview.status, 200, `preview with the token: ${preview.text}`);
      assert.equal(preview.json.matched, 3, 'flaky dead tasks: the 2 left of the first 3, and the XSS one');
      const previewNoToken = await api(page, 'POST', '/api/dead/preview', { body: { ns: 'shop', type: 'flaky' } });
      assert.equal(previewNoToken.status, 403, `preview without the token: ${previewNoToken.text}`);

      const after = stack.taskState(id);
      assert.equal(after.state, 'dead', 'the task is still dead');
      assert.equal(after.events.length, before.events.length, 'nothing happened to the task');
    });
  });

  it('8. a read-only console shows its badge and refuses actions', async () => {
    const ro = await stack.startConsole('console-read-only', ['--read-only']);
    const id = flakyIds[1];
    try {
      const { context, page } = await newSession('read-only');
      try {
        await login(page, 'admin', stack.passwords.admin, ro.url);
        await page.getByTestId('read-only-badge').waitFor();
        assert.ok(await page.getByTestId('read-only-badge').isVisible(), 'the read-only badge is visible');
        const me = await session(page);
        assert.equal(me.read_only, true);
        assert.equal(me.can_act, false);
        await page.goto(`${ro.url}/#/task/shop/${id}`);
        await page.getByTestId('task-state').filter({ hasText: /dead/i }).waitFor();
        await page.getByTestId('task-error-stack').first().waitFor();
        assert.equal(await page.getByTestId('replay-button').count(), 0, 'no replay button in read-only mode');
        assert.equal(await page.getByTestId('delete-button').count(), 0, 'no delete button in read-only mode');
        await page.getByTestId('nav-failed').click();
        await page.locator(`[data-testid="failed-row"][data-task-id="${id}"]`).waitFor();
        assert.equal(await page.getByTestId('replay-button').count(), 0, 'no replay button in the failed list');
        assert.equal(await page.getByTestId('delete-button').count(), 0, 'no delete button in the failed list');
        assert.equal(await page.getByTestId('bulk-replay').count(), 0, 'no bulk replay in read-only mode');
        await screenshot(page, 'failed-read-only');
        const before = stack.taskState(id);
        const res = await api(page, 'POST', '/api/dead/replay', { body: { ns: 'shop', id }, csrf: me.csrf });
        assert.equal(res.status, 403, `replay in read-only mode: ${res.text}`);
        const bulk = await api(page, 'POST', '/api/dead/bulk',
          { body: { action: 'delete', ns: 'shop', type: 'flaky', expect: 999 }, csrf: me.csrf });
        // expect 999 matches nothing: a console that forgot read-only answers 409, not 403,
        // and deletes nothing.
        assert.equal(bulk.status, 403, `bulk delete in read-only mode: ${bulk.text}`);
        const after = stack.taskState(id);
        assert.equal(after.state, 'dead');
        assert.equal(after.events.length, before.events.length, 'nothing happened to the task');
      } catch (err) {
        await screenshot(page, 'failure-read-only').catch(() => {});
        throw err;
      } finally {
        await context.close();
      }
    } finally {
      await ro.stop();
    }
  });

  it('9. every page renders (screenshots) and the live page updates without reload', async () => {
    await withPage('pages', async (page) => {
      await login(page, 'admin');
      await page.goto(`${server.url}/#/overview`);
      await page.getByTestId('overview-ns-shop').waitFor();

      // Each page through its nav link.
      const pages = [
        ['overview', async () => page.getByTestId('overview-ns-shop').waitFor()],
        ['failed', async () => page.getByTestId('failed-row').first().waitFor()],
        ['workers', async () => {
          // The Python worker (consumer <service>:<host>:<pid>:<hex>:python) of worker.py.
          const worker = page.getByText(/console-test:[^:]+:\d+:[0-9a-f]+:python/).first();
          await worker.waitFor();
        }],
        ['cron', async () => {
          const row = page.getByTestId('cron-row').filter({ hasText: 'nightly-report' });
          await row.waitFor();
          assert.ok((await row.textContent()).includes('30 2 * * *'), 'the cron row shows its schedule');
        }],
        ['audit', async () => page.getByTestId('audit-row').first().waitFor()],
      ];
      for (const [name, ready] of pages) {
        await page.getByTestId(`nav-${name}`).click();
        await page.waitForURL((u) => u.hash.startsWith(`#/${name}`));
        await ready();
        await screenshot(page, name);
      }

      // Live: a type no worker runs, so its tasks stay ready and its numbers are exact.
      await page.getByTestId('nav-live').click();
      await page.waitForURL((u) => u.hash.startsWith('#/live'));
      await page.getByTestId('live-status').waitFor();
      await page.evaluate(() => { window.__sameDocument = true; });
      for (let i = 0; i < 3; i++) stack.enqueue('parked', { i });
      const queue = page.getByTestId('live-queue-shop-parked');
      await queue.waitFor();
      await waitUntil('live-queue-shop-parked to show 3 ready', async () =>
        numbersIn(await queue.textContent()).includes(3));
      await screenshot(page, 'live');
      for (let i = 3; i < 5; i++) stack.enqueue('parked', { i });
      await waitUntil('live-queue-shop-parked to show 5 ready', async () =>
        numbersIn(await queue.textContent()).includes(5));
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the live page was not reloaded');
      assert.match(await page.getByTestId('live-status').textContent(), /\S/, 'live-status says something');

      // Doctor: the form's page, then the verdict on a dead task (the route's query fills it).
      await page.getByTestId('nav-doctor').click();
      await page.waitForURL((u) => u.hash.startsWith('#/doctor'));
      const deadId = flakyIds[1];
      const verdict = await api(page, 'GET', `/api/doctor?ns=shop&id=${deadId}`);
      assert.equal(verdict.status, 200, verdict.text);
      assert.match(JSON.stringify(verdict.json), /dead/i, `the verdict on a dead task says so: ${verdict.text}`);
      await page.goto(`${server.url}/#/doctor?ns=shop&id=${deadId}`);
      const shown = page.getByTestId('doctor-verdict').first();
      await shown.waitFor();
      const shownText = await shown.textContent();
      assert.match(shownText, /dead/i, `doctor-verdict shows the verdict: ${shownText}`);
      await screenshot(page, 'doctor');
    });
  });

  it('10. the audit log shows the replay of test 4', async () => {
    assert.ok(ids.replayed, 'test 4 replayed a task');
    await withPage('audit', async (page) => {
      await login(page, 'admin');
      const res = await api(page, 'GET', '/api/audit');
      assert.equal(res.status, 200, res.text);
      const entry = res.json.entries.find((e) => (e.task_ids || []).includes(ids.replayed) || e.target === ids.replayed);
      assert.ok(entry, `an audit entry for ${ids.replayed}: ${res.text}`);
      assert.equal(entry.user, 'admin');
      assert.match(entry.action, /replay/);
      await page.goto(`${server.url}/#/audit`);
      const row = page.getByTestId('audit-row').filter({ hasText: ids.replayed });
      await row.first().waitFor();
      const text = await row.first().textContent();
      assert.ok(text.includes('admin'), `the audit row names the user: ${text}`);
      assert.match(text, /replay/i, `the audit row names the action: ${text}`);
      await screenshot(page, 'audit');
    });
  });

  it('11. an operator edits and replays one dead task, and deletes another', async () => {
    const editId = flakyIds[2];
    const deleteId = ids.xss;
    assert.ok(deleteId, 'test 5 made the XSS task');
    await withPage('operator', async (page) => {
      await login(page, 'operator');
      const me = await session(page);
      assert.equal(me.can_act, true);
      assert.equal(me.can_bulk, false);

      // Edit & replay: a payload that is not a JSON object is refused in the editor; a fixed one
      // is replayed and reaches Redis (no marker file: the worker fails it again).
      await openTask(page, editId);
      await page.getByTestId('edit-replay-button').click();
      const editor = page.getByTestId('payload-editor');
      await waitUntil('the editor to hold the payload', async () => (await editor.inputValue()).includes('102'));
      const before = stack.taskState(editId);
      await editor.fill('[1, 2]');
      await page.getByTestId('payload-submit').click();
      await page.getByTestId('payload-error').filter({ hasText: /\S/ }).waitFor();
      assert.equal(stack.taskState(editId).events.length, before.events.length, 'an invalid payload is not sent');
      await editor.fill('{"order": 102, "edited": "by operator"}');
      await page.getByTestId('payload-submit').click();
      await page.getByTestId('toast').filter({ hasText: editId }).first().waitFor();
      const edited = await waitUntil('the edited task to be dead again', () => {
        const t = stack.taskState(editId);
        return t && t.state === 'dead' && t.events.length > before.events.length ? t : null;
      });
      assert.deepEqual(edited.body.payload, { order: 102, edited: 'by operator' }, 'Redis holds the edited payload');
      assert.ok(edited.events.some((e) => e.from === 'dead' && e.to === 'queued'), 'the task was replayed');

      // Delete from the failed list (a confirm() is accepted).
      await page.getByTestId('nav-failed').click();
      const row = page.locator(`[data-testid="failed-row"][data-task-id="${deleteId}"]`);
      await row.waitFor();
      await row.getByTestId('delete-button').click();
      await page.getByTestId('toast').filter({ hasText: deleteId }).first().waitFor();
      assert.ok(page.dialogs.some((d) => d.type === 'confirm'), 'the delete asked first');
      await waitUntil(`task ${deleteId} deleted in Redis`, () => {
        const st = redisState(deleteId);
        return st === 'deleted' || st === null;
      });
      await row.waitFor({ state: 'detached' });

      // No bulk actions for an operator: the preview counts, no buttons.
      await page.getByTestId('bulk-ns').fill('shop');
      await page.getByTestId('bulk-type').fill('flaky');
      await page.getByTestId('bulk-preview').click();
      await page.getByTestId('bulk-count').waitFor();
      assert.equal(await page.getByTestId('bulk-replay').count(), 0, 'no bulk replay for an operator');
      assert.equal(await page.getByTestId('bulk-delete').count(), 0, 'no bulk delete for an operator');
      const bulk = await api(page, 'POST', '/api/dead/bulk',
        { body: { action: 'delete', ns: 'shop', type: 'flaky', expect: 999 }, csrf: me.csrf });
      assert.equal(bulk.status, 403, `an operator's bulk delete: ${bulk.text}`);

      const audit = await api(page, 'GET', '/api/audit');
      assert.equal(audit.status, 403, `an operator reading the audit log: ${audit.text}`);
    });
  });

  it('12. an admin previews a filter and bulk-replays it; the worker completes them', async () => {
    const dead = [flakyIds[1], flakyIds[2]];
    fs.writeFileSync(stack.marker, 'fixed\n');
    try {
      await withPage('bulk', async (page) => {
        await login(page, 'admin');
        await page.goto(`${server.url}/#/failed`);
        await page.getByTestId('bulk-ns').fill('shop');
        await page.getByTestId('bulk-type').fill('flaky');
        await page.getByTestId('bulk-preview').click();
        const count = page.getByTestId('bulk-count');
        await count.waitFor();
        assert.ok(numbersIn(await count.textContent()).includes(2), `bulk-count shows 2: ${await count.textContent()}`);
        await page.getByTestId('bulk-replay').click();
        await page.getByTestId('toast').filter({ hasText: /2 of 2/ }).first().waitFor();
        for (const id of dead) {
          await waitUntil(`task ${id} done in Redis`, () => redisState(id) === 'done');
        }
        const audit = await api(page, 'GET', '/api/audit');
        assert.equal(audit.status, 200, audit.text);
        const entry = audit.json.entries.find((e) => /bulk/.test(e.action) && /replay/.test(e.action + (e.detail || '')));
        assert.ok(entry, `an audit entry for the bulk replay: ${audit.text}`);
        assert.equal(entry.user, 'admin');
        for (const id of dead) {
          assert.ok((entry.task_ids || []).includes(id), `the bulk replay's audit entry lists ${id}`);
        }
        const del = audit.json.entries.find((e) => /delete/.test(e.action) && (e.task_ids || []).includes(ids.xss));
        assert.ok(del, 'the delete of test 11 is audited');
        assert.equal(del.user, 'operator');
      });
    } finally {
      fs.rmSync(stack.marker, { force: true });
    }
  });
});
