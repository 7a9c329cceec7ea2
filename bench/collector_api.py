#!/usr/bin/env python3
"""GET latency of baton-collector's HTTP API against a store that already holds the events.

    python3 bench/collector_api.py --url http://127.0.0.1:7070 --ids IDS [--requests 200]
                                   [--events N]

IDS holds "namespace type task_id" lines of stored tasks (collector_ingest --ids-out). Each
endpoint gets a few warm-up requests (not counted; the first one's time is printed as "first"),
then --requests sequential requests, one at a time, a new connection each (urllib), timed from
the request to the last byte of the body:
  overview   /api/overview
  timeline   /api/tasks/{id}                       a random stored task each time
  dead       /api/dead?q=<word>                    words found in the stored errors, in turn
  series     /api/series?namespace=..&type=..      a random stored (namespace, type), last hour
  series-24h the same over the last 24 hours
  workers    /api/workers?window_ms=86400000
  metrics    /metrics
Every response must be 200 (a timeline: of the task asked for). --events only labels the output.
Python 3 standard library only.
"""
import argparse
import json
import math
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

DEAD_WORDS = ["timeout", "connection", "503", "pool exhausted", "customer_email"]


def get(url):
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
        status = response.status
    return (time.perf_counter() - start) * 1000.0, status, body


def percentile(values, q):
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--events", default="")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    base = args.url.rstrip("/")
    rng = random.Random(args.seed)
    with open(args.ids) as f:
        tasks = [line.split() for line in f if line.strip()]
    if not tasks:
        sys.exit("collector_api: no task ids in " + args.ids)
    pairs = sorted({(ns, ty) for ns, ty, _ in tasks})
    now_ms = int(time.time() * 1000)
    quote = urllib.parse.quote

    def series(hours):
        def make(i):
            ns, ty = rng.choice(pairs)
            query = {"namespace": ns, "type": ty}
            if hours != 1:
                query.update({"from": now_ms - hours * 3600000, "to": now_ms})
            return "/api/series?" + urllib.parse.urlencode(query)
        return make

    endpoints = [
        ("overview", lambda i: "/api/overview"),
        ("timeline", lambda i: "/api/tasks/" + quote(rng.choice(tasks)[2])),
        ("dead", lambda i: "/api/dead?q=" + quote(DEAD_WORDS[i % len(DEAD_WORDS)])),
        ("series", series(1)),
        ("series-24h", series(24)),
        ("workers", lambda i: "/api/workers?window_ms=86400000"),
        ("metrics", lambda i: "/metrics"),
    ]
    label = f" with {int(args.events):,} events stored" if args.events else ""
    print(f"API latency{label}: {args.requests} sequential GETs per endpoint, ms "
          f"(after {args.warmup} warm-up requests; 'first' is the first of those)")
    results = {}
    for name, path in endpoints:
        times, sizes, first = [], [], None
        for i in range(args.warmup + args.requests):
            url = base + path(i)
            try:
                ms, status, body = get(url)
            except urllib.error.HTTPError as e:
                sys.exit(f"collector_api: {url}: HTTP {e.code}: {e.read()[:300]!r}")
            if status != 200:
                sys.exit(f"collector_api: {url}: HTTP {status}")
            if name == "timeline" and json.loads(body)["task_id"] != urllib.parse.unquote(
                    url.rsplit("/", 1)[1]):
                sys.exit(f"collector_api: {url}: another task's timeline")
            if i == 0:
                first = ms
            if i >= args.warmup:
                times.append(ms)
                sizes.append(len(body))
        p50, p95, p99 = (percentile(times, q) for q in (0.50, 0.95, 0.99))
        results[name] = p95
        print(f"  {name:<10} p50 {p50:7.2f}  p95 {p95:7.2f}  p99 {p99:7.2f}  max {max(times):7.2f}"
              f"  first {first:7.2f}  ({sum(sizes) / len(sizes) / 1024:.1f} KiB/response)")
    verdict = " and ".join(f"{n} {results[n]:.1f} ms" for n in ("overview", "timeline"))
    met = all(results[n] < 50 for n in ("overview", "timeline"))
    print(f"aim p95 < 50 ms for overview and timeline: {verdict}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
