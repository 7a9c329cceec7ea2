#!/usr/bin/env python3
"""Latency of baton-console's API and pages against a store that already holds the events.

    python3 bench/console_latency.py --url http://127.0.0.1:8088 --user U --password P --ids IDS
                                     [--requests 200] [--events N]

Logs in (POST /api/login; the baton_session cookie and the csrf token are sent from then on), then:

(a) each API endpoint: a few warm-up requests (not counted; the first one's time is printed as
    "first"), then --requests sequential requests, one at a time, a new connection each, timed
    from the request to the last byte of the body:
      session        /api/session
      namespaces     /api/namespaces                         (Redis)
      overview       /api/overview
      series-1h      /api/series?ns&type&from_ms&to_ms       a random stored (ns, type), last hour
      series-24h     the same over the last 24 hours
      daily          /api/daily?days=30
      dead           /api/dead?limit=100&offset=0            the failed page's first search
      dead-text      /api/dead?text=<word>&limit=100         words found in the stored errors
      task           /api/tasks/{ns}/{id}                    a random stored task (IDS)
      task-dead      /api/tasks/{ns}/{id}                    a random task dead in Redis
      payload        /api/tasks/{ns}/{id}/payload            the same
      workers        /api/workers?window_ms=600000           the workers page's default window
      workers-24h    /api/workers?window_ms=86400000
      live-snapshot  /api/live/snapshot
      cron           /api/cron                               (Redis, and the store per job)
      doctor-queue   /api/doctor?ns&type                     a random queue in Redis
      doctor-task    /api/doctor?ns&id                       a random dead task in Redis
      audit          /api/audit?limit=100&offset=0
      dead-preview   POST /api/dead/preview {"ns"}           each namespace in Redis in turn
      index.html, app.js, app.css                            the static front end

(b) each page as a browser loads it by its URL (a cold load of the single-page app): index.html,
    then app.css and app.js together, then GET /api/session (main.ts boot), then the calls the
    page's module in console/web/src makes as soon as it renders, each started as soon as what it
    depends on has arrived, up to 6 at once (a browser's connections per host), a new connection
    each. Timed from the first request to the last byte of the last answer:
      overview       /api/overview + /api/daily?days=30; once the overview is in, one
                     /api/series (last hour, the namespace's first type) per namespace
      live           /api/live (Server-Sent Events) up to the end of the first `snapshot` event
      failed         /api/namespaces + /api/dead?limit=100&offset=0
      task           /api/tasks/NS/ID, then /api/tasks/NS/ID/payload: a task dead in Redis
      task-finished  the same for a random stored task (IDS): finished, so not in Redis, and the
                     payload answers 404 (the page then says it is not kept): that one 404 is the
                     expected answer, checked as such
      workers        /api/workers?window_ms=600000
      cron           /api/cron
      doctor         #/doctor?ns=..&type=.. or ?ns=..&id=.. (in turn): /api/doctor
      audit          /api/audit?limit=100&offset=0
    The live page's streams are started at least 250 ms apart, untimed, so that the server's stream
    threads (each ends at the next snapshot after the page closed it) stay under its caps (8 per
    user, 48 in all).
(c) not a page load: the overview's chart range changed to 6 h and to 24 h, which reloads every
    namespace's chart at once (one /api/series each, the namespace's first type); timed from the
    first request to the last byte. Printed, not part of the verdict.

Every response must be 200 (except the documented 404 above); anything else stops the run.
The last line is the verdict: "aim p95 < 100 ms for every page: met" or "NOT met", with the worst
page. IDS holds "namespace type task_id" lines of stored tasks (collector_ingest --ids-out); the
dead tasks and queues in Redis are found through the console (/api/dead/preview, the live
snapshot). --events only labels the output. Python 3 standard library only.
"""
import argparse
import concurrent.futures
import http.client
import json
import random
import sys
import time
import urllib.parse

# The same error words and percentile as the collector's API bench (same store fill).
from collector_api import DEAD_WORDS, percentile  # noqa: E402  (bench/ is the script's dir)

BROWSER_CONNECTIONS = 6
PAGE_AIM_MS = 100.0


class Failure(Exception):
    pass


class Console:
    """The console's HTTP client: one new connection per request, the session cookie and CSRF."""

    def __init__(self, url):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise SystemExit(f"console_latency: --url must be http://HOST:PORT (got {url})")
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.cookie = ""
        self.csrf = ""

    def _headers(self, accept, body):
        headers = {"Accept": accept}
        if self.cookie:
            headers["Cookie"] = self.cookie
        if body is not None:
            headers["Content-Type"] = "application/json"
            if self.csrf:
                headers["X-CSRF-Token"] = self.csrf
        return headers

    def request(self, method, path, body=None, expect=200, accept="application/json"):
        """Returns (ms, body bytes, response headers); raises Failure on another status."""
        data = None if body is None else json.dumps(body).encode()
        start = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=data, headers=self._headers(accept, data))
            response = conn.getresponse()
            payload = response.read()
            ms = (time.perf_counter() - start) * 1000.0
            if response.status != expect:
                raise Failure(f"{method} {path}: HTTP {response.status} (expected {expect}): "
                              f"{payload[:300]!r}")
            return ms, payload, response.headers
        except (OSError, http.client.HTTPException) as e:
            raise Failure(f"{method} {path}: {type(e).__name__}: {e}") from e
        finally:
            conn.close()

    def get(self, path, expect=200, accept="application/json"):
        return self.request("GET", path, expect=expect, accept=accept)

    def get_json(self, path):
        _, body, _ = self.get(path)
        return json.loads(body)

    def post(self, path, body):
        return self.request("POST", path, body=body)

    def first_snapshot(self, path="/api/live"):
        """Opens the live stream, reads up to the end of the first snapshot event, closes it."""
        start = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request("GET", path, headers=self._headers("text/event-stream", None))
            response = conn.getresponse()
            if response.status != 200:
                raise Failure(f"GET {path}: HTTP {response.status}: {response.read(300)!r}")
            event, data, size = "", [], 0
            while True:
                line = response.readline()
                if not line:
                    raise Failure(f"GET {path}: the stream ended before a snapshot")
                size += len(line)
                line = line.rstrip(b"\r\n").decode()
                if line == "":
                    if event == "snapshot" and data:
                        json.loads("\n".join(data))  # a whole snapshot arrived
                        break
                    event, data = "", []
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
            ms = (time.perf_counter() - start) * 1000.0
            return ms, size
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise Failure(f"GET {path}: {type(e).__name__}: {e}") from e
        finally:
            conn.close()

    def login(self, user, password):
        _, body, headers = self.request("POST", "/api/login", {"user": user, "password": password})
        for value in headers.get_all("Set-Cookie") or []:
            first = value.split(";", 1)[0]
            if first.startswith("baton_session="):
                self.cookie = first
        session = json.loads(body)
        self.csrf = session.get("csrf", "")
        if not self.cookie or not self.csrf:
            raise SystemExit("console_latency: the login answered no baton_session cookie or csrf")
        return session


class Browser:
    """Loads pages: each request on its own thread, at most 6 at once."""

    def __init__(self, console):
        self.console = console
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=BROWSER_CONNECTIONS)

    def fetch(self, path, expect=200, accept="application/json"):
        return self.pool.submit(self.console.get, path, expect, accept)

    def stream(self, path):
        return self.pool.submit(self.console.first_snapshot, path)

    def boot(self):
        """index.html, then app.css + app.js, then /api/session: every page's start."""
        _, html, _ = self.fetch("/index.html", accept="text/html").result()
        if b"/app.js" not in html or b"/app.css" not in html:
            raise Failure("index.html does not load /app.js and /app.css")
        css = self.fetch("/app.css", accept="text/css")
        js = self.fetch("/app.js", accept="*/*")
        css.result()
        js.result()
        self.fetch("/api/session").result()

    def close(self):
        self.pool.shutdown(wait=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--events", default="")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.requests < 1 or args.warmup < 1:
        parser.error("--requests and --warmup must be at least 1")
    rng = random.Random(args.seed)
    with open(args.ids) as f:
        stored = [line.split() for line in f if line.strip()]
    if not stored:
        sys.exit("console_latency: no task ids in " + args.ids)
    pairs = sorted({(ns, ty) for ns, ty, _ in stored})
    quote = lambda s: urllib.parse.quote(s, safe="")  # noqa: E731
    enc = urllib.parse.urlencode

    console = Console(args.url)
    try:
        session = console.login(args.user, args.password)
        if not session.get("can_audit"):
            sys.exit(f"console_latency: user {args.user} is {session.get('role')}: the audit page "
                     "needs an admin")
        # What Redis holds, as the console sees it: namespaces, queues, dead tasks.
        namespaces = console.get_json("/api/namespaces")["namespaces"]
        snapshot = console.get_json("/api/live/snapshot")
        queues = sorted({(n["ns"], q["type"]) for n in snapshot.get("namespaces", [])
                         for q in n.get("queues", [])})
        # The overview's charts: each stored namespace's first type (overview.ts fillCard).
        chart_keys = [(n["namespace"], sorted(n["types"])[0])
                      for n in console.get_json("/api/overview")["namespaces"] if n.get("types")]
        dead = []
        for ns in namespaces:
            preview = json.loads(console.post("/api/dead/preview", {"ns": ns})[1])
            dead += [(ns, t["task_id"]) for t in preview.get("sample", [])]
    except Failure as e:
        sys.exit(f"console_latency: {e}")
    if not namespaces or not queues or not dead:
        sys.exit(f"console_latency: Redis holds {len(namespaces)} namespaces, {len(queues)} "
                 f"queues, {len(dead)} dead tasks: the bench needs some of each (run_console.sh "
                 "puts them there)")

    def window(hours):
        to_ms = int(time.time() * 1000)
        return {"from_ms": to_ms - hours * 3600000, "to_ms": to_ms}

    def series(hours):
        def make(i):
            ns, ty = rng.choice(pairs)
            return "/api/series?" + enc({"ns": ns, "type": ty, **window(hours)})
        return make

    def task_path(ns, tid):
        return f"/api/tasks/{quote(ns)}/{quote(tid)}"

    def doctor_queue(i):
        ns, ty = rng.choice(queues)
        return "/api/doctor?" + enc({"ns": ns, "type": ty})

    def doctor_task(i):
        ns, tid = rng.choice(dead)
        return "/api/doctor?" + enc({"ns": ns, "id": tid})

    def stored_task(i):
        ns, _, tid = rng.choice(stored)
        ms, body, headers = console.get(task_path(ns, tid))
        timeline = json.loads(body).get("timeline") or {}
        if timeline.get("task_id") != tid:
            raise Failure(f"{task_path(ns, tid)}: no stored timeline of that task")
        return ms, body, headers

    def dead_task(i):
        ns, tid = rng.choice(dead)
        return task_path(ns, tid)

    get = lambda make: lambda i: console.get(make(i))  # noqa: E731
    endpoints = [
        ("session", get(lambda i: "/api/session")),
        ("namespaces", get(lambda i: "/api/namespaces")),
        ("overview", get(lambda i: "/api/overview")),
        ("series-1h", get(series(1))),
        ("series-24h", get(series(24))),
        ("daily", get(lambda i: "/api/daily?days=30")),
        ("dead", get(lambda i: "/api/dead?limit=100&offset=0")),
        ("dead-text", get(lambda i: "/api/dead?" + enc(
            {"text": DEAD_WORDS[i % len(DEAD_WORDS)], "limit": 100}))),
        ("task", stored_task),
        ("task-dead", get(dead_task)),
        ("payload", lambda i: console.get(dead_task(i) + "/payload", accept="*/*")),
        ("workers", get(lambda i: "/api/workers?window_ms=600000")),
        ("workers-24h", get(lambda i: "/api/workers?window_ms=86400000")),
        ("live-snapshot", get(lambda i: "/api/live/snapshot")),
        ("cron", get(lambda i: "/api/cron")),
        ("doctor-queue", get(doctor_queue)),
        ("doctor-task", get(doctor_task)),
        ("audit", get(lambda i: "/api/audit?limit=100&offset=0")),
        ("dead-preview", lambda i: console.post(
            "/api/dead/preview", {"ns": namespaces[i % len(namespaces)]})),
        ("index.html", lambda i: console.get("/index.html", accept="text/html")),
        ("app.js", lambda i: console.get("/app.js", accept="*/*")),
        ("app.css", lambda i: console.get("/app.css", accept="text/css")),
    ]

    browser = Browser(console)

    def page_overview(i):
        overview = browser.fetch("/api/overview")
        daily = browser.fetch("/api/daily?days=30")
        answer = json.loads(overview.result()[1])
        charts = []
        for n in answer.get("namespaces", []):
            types = sorted(n.get("types", {}))
            if types:
                charts.append(browser.fetch("/api/series?" + enc(
                    {"ns": n["namespace"], "type": types[0], **window(1)})))
        daily.result()
        for c in charts:
            c.result()
        return 2 + len(charts)

    last_live = [0.0]

    def page_live_pace():
        wait = last_live[0] + 0.25 - time.perf_counter()
        if wait > 0:
            time.sleep(wait)

    def page_live(i):
        last_live[0] = time.perf_counter()
        browser.stream("/api/live").result()
        return 1

    def page_failed(i):
        a = browser.fetch("/api/namespaces")
        b = browser.fetch("/api/dead?limit=100&offset=0")
        a.result()
        b.result()
        return 2

    def page_task(i):
        ns, tid = rng.choice(dead)
        answer = json.loads(browser.fetch(task_path(ns, tid)).result()[1])
        if answer.get("live") is None:
            raise Failure(f"task {ns}/{tid}: not in Redis any more")
        browser.fetch(task_path(ns, tid) + "/payload", accept="*/*").result()
        return 2

    def page_task_finished(i):
        ns, _, tid = rng.choice(stored)
        answer = json.loads(browser.fetch(task_path(ns, tid)).result()[1])
        if answer.get("timeline") is None or answer.get("live") is not None:
            raise Failure(f"task {ns}/{tid}: expected a stored, finished task")
        _, body, _ = browser.fetch(task_path(ns, tid) + "/payload", expect=404,
                                   accept="*/*").result()
        if "error" not in json.loads(body):
            raise Failure(f"task {ns}/{tid}/payload: a 404 without an error message")
        return 2

    def page_one(path):
        def load(i):
            browser.fetch(path).result()
            return 1
        return load

    def page_doctor(i):
        browser.fetch(doctor_queue(i) if i % 2 == 0 else doctor_task(i)).result()
        return 1

    pages = [
        ("overview", page_overview, None),
        ("live", page_live, page_live_pace),
        ("failed", page_failed, None),
        ("task", page_task, None),
        ("task-finished", page_task_finished, None),
        ("workers", page_one("/api/workers?window_ms=600000"), None),
        ("cron", page_one("/api/cron"), None),
        ("doctor", page_doctor, None),
        ("audit", page_one("/api/audit?limit=100&offset=0"), None),
    ]

    label = f" with {int(args.events):,} events stored" if args.events else ""
    print(f"console latency{label}: Redis holds {len(namespaces)} namespaces, {len(queues)} "
          f"queues, {len(dead)} dead tasks sampled")
    print(f"(a) API: {args.requests} sequential requests per endpoint, ms (after {args.warmup} "
          f"warm-up requests; 'first' is the first of those)")
    try:
        for name, call in endpoints:
            times, sizes, first = [], [], None
            for i in range(args.warmup + args.requests):
                ms, body, _ = call(i)
                if i == 0:
                    first = ms
                if i >= args.warmup:
                    times.append(ms)
                    sizes.append(len(body))
            p50, p95, p99 = (percentile(times, q) for q in (0.50, 0.95, 0.99))
            print(f"  {name:<13} p50 {p50:7.2f}  p95 {p95:7.2f}  p99 {p99:7.2f}  "
                  f"max {max(times):7.2f}  first {first:7.2f}  "
                  f"({sum(sizes) / len(sizes) / 1024:.1f} KiB/response)", flush=True)

        print(f"(b) pages: {args.requests} sequential loads per page, ms from index.html to the "
              f"last byte of the page's last API answer (index.html, app.css + app.js, "
              f"/api/session, the page's calls; up to {BROWSER_CONNECTIONS} requests at once; "
              f"after {args.warmup} warm-up loads)")
        results = {}
        for name, load, pace in pages:
            times, first, calls = [], None, 0
            for i in range(args.warmup + args.requests):
                if pace:
                    pace()
                start = time.perf_counter()
                browser.boot()
                n = load(i)
                ms = (time.perf_counter() - start) * 1000.0
                if i == 0:
                    first = ms
                if i >= args.warmup:
                    times.append(ms)
                    calls = n
            p50, p95, p99 = (percentile(times, q) for q in (0.50, 0.95, 0.99))
            results[name] = p95
            print(f"  {name:<13} p50 {p50:7.2f}  p95 {p95:7.2f}  p99 {p99:7.2f}  "
                  f"max {max(times):7.2f}  first {first:7.2f}  ({4 + calls} requests)",
                  flush=True)
        # Not a page load: the overview's chart range changed to 6 h, then 24 h, which reloads
        # every namespace's chart at once (overview.ts loadChart).
        print(f"(c) the overview's chart range changed (not a page load): its {len(chart_keys)} "
              f"/api/series calls at once, {args.requests} times, ms")
        for hours in (6, 24):
            times, first = [], None
            for i in range(args.warmup + args.requests):
                start = time.perf_counter()
                calls = [browser.fetch("/api/series?" + enc({"ns": ns, "type": ty,
                                                             **window(hours)}))
                         for ns, ty in chart_keys]
                for c in calls:
                    c.result()
                ms = (time.perf_counter() - start) * 1000.0
                if i == 0:
                    first = ms
                if i >= args.warmup:
                    times.append(ms)
            p50, p95, p99 = (percentile(times, q) for q in (0.50, 0.95, 0.99))
            print(f"  {f'range {hours} h':<13} p50 {p50:7.2f}  p95 {p95:7.2f}  p99 {p99:7.2f}  "
                  f"max {max(times):7.2f}  first {first:7.2f}", flush=True)
    except Failure as e:
        sys.exit(f"console_latency: {e}")
    finally:
        browser.close()
    worst = max(results, key=results.get)
    over = [f"{n} {p:.1f} ms" for n, p in results.items() if p >= PAGE_AIM_MS]
    print(f"aim p95 < {PAGE_AIM_MS:.0f} ms for every page: {'NOT met' if over else 'met'} "
          f"(worst: {worst}, p95 {results[worst]:.1f} ms"
          f"{'; over the aim: ' + ', '.join(over) if over else ''})")


if __name__ == "__main__":
    main()
