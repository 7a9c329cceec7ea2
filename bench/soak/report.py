"""The soak run's console output: one line per window, then the summary."""

LAT_COLUMNS = [("imm start p50/p99", "immediate_start"), ("imm done p50/p99/max", "immediate_done"),
               ("delay late p99", "delayed_start"), ("retry done p99", "retried_done")]


def _mib(kib):
    return "-" if kib is None else f"{kib / 1024:.1f}"


def _lat(p, keys):
    return "-" if p is None else "/".join(str(p[k]) for k in keys)


def print_header(o, procs):
    print(f"soak: {o.mode} mode, {o.seconds:g} s at {o.rate:g} tasks/s "
          f"(delayed {o.delayed:g}, retried {o.retried:g}, python share {o.py_share:g}), "
          f"window {o.window:g} s, warm-up {o.warmup:g} s, done_retention_s "
          f"{o.done_retention_s}, events_maxlen {o.events_maxlen}", flush=True)
    names = " ".join(f"{p.name + ' MiB':>11}" for p in procs)
    print(f"{'t s':>6} {'enq/s':>6} {'done/s':>6} {'stream':>6} {'live':>6} {'done set':>8} "
          f"{'events':>6} {'redis MiB':>9} {names} {'redis rss':>9} "
          + " ".join(f"{c:>{len(c)}}" for c, _ in LAT_COLUMNS), flush=True)


def print_window(w, procs):
    rss = " ".join(f"{_mib(w['rss_kib'][p.name]):>11}" for p in procs)
    lat = w["latency_ms"]
    cells = [_lat(lat["immediate_start"], ("p50", "p99")),
             _lat(lat["immediate_done"], ("p50", "p99", "max")),
             _lat(lat["delayed_start"], ("p99",)), _lat(lat["retried_done"], ("p99",))]
    print(f"{w['t']:>6} {w['produced_per_s']:>6} {w['done_per_s']:>6} {w['streams']:>6} "
          f"{w['tasks']:>6} {w['done']:>8} {w['events']:>6} {_mib(w['used_memory_kib']):>9} "
          f"{rss} {_mib(w['rss_kib']['redis-server']):>9} "
          + " ".join(f"{c:>{len(h)}}" for c, (h, _) in zip(cells, LAT_COLUMNS)), flush=True)


def print_summary(s, out):
    print(f"\nrate: {s['achieved_rate']} tasks/s of {s['target_rate']:g} for {s['seconds']} s; "
          f"produced {s['produced']}, done {s['done']} (retried {s['retries']}), lost {s['lost']}, "
          f"not done {s['not_done']}, extra runs {s['extra_runs']}, drained in {s['drain_s']} s")
    print("latency ms (Redis clock, events stream)      n      p50    p95    p99    max")
    for kind, p in s["latency_ms"].items():
        if p:
            print(f"  {kind:<40} {p['n']:>7} {p['p50']:>6} {p['p95']:>6} {p['p99']:>6} "
                  f"{p['max']:>6}")
    print("memory KiB                 start  after-warmup  last-third  growth  slope KiB/min")
    for name, g in s["memory"].items():
        if g:
            print(f"  {name:<20} {g['start_kib']:>8} {g['after_warmup_kib']:>13} "
                  f"{g['last_third_mean_kib']:>11} {g['growth_kib']:>7} "
                  f"{g['slope_kib_per_min']:>14}")
    for f in s["failures"]:
        print(f"FAIL: {f}")
    print(f"soak: {'OK' if s['ok'] else 'FAILED'} (report: {out})", flush=True)
