"""Figures of a soak run: percentiles, least-squares slopes and the leak verdict per series."""

from collector_api import percentile  # bench/: nearest-rank, as every bench reports


def percentiles(samples):
    """p50, p95, p99 and max of a list/array of ms (None when empty), nearest-rank."""
    if not samples:
        return None
    s = sorted(samples)
    return {"n": len(s), "p50": percentile(s, 0.50), "p95": percentile(s, 0.95),
            "p99": percentile(s, 0.99), "max": s[-1]}


def slope_per_min(points):
    """Least-squares slope of [(t seconds, value)] in value units per minute (0 if < 3 points)."""
    if len(points) < 3:
        return 0.0
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return 60.0 * sum((t - mt) * (v - mv) for t, v in points) / var


def growth(points, warmup_s):
    """Memory figures of one series [(t, KiB)] after warm-up: the first value after warm-up, the
    mean of the last third of the run, their difference and the least-squares slope (KiB/min)."""
    steady = [(t, v) for t, v in points if t >= warmup_s and v is not None]
    if len(steady) < 3:
        return None
    end = steady[-1][0]
    last_third_from = end - (end - steady[0][0]) / 3
    last = [v for t, v in steady if t >= last_third_from]
    after_warmup = steady[0][1]
    last_third = sum(last) / len(last)
    return {"start_kib": points[0][1], "after_warmup_kib": after_warmup,
            "last_third_mean_kib": round(last_third), "end_kib": steady[-1][1],
            "growth_kib": round(last_third - after_warmup),
            "slope_kib_per_min": round(slope_per_min(steady), 1)}


def leak_verdict(g, bound_kib, slope_bound):
    """None when g is within the bounds, else the reason. The slope bound applies only when the
    growth itself is over half its bound: a slope over a short flat series is mostly noise."""
    if g is None:
        return "too few samples after warm-up"
    if g["growth_kib"] > bound_kib:
        return f"grew {g['growth_kib']} KiB after warm-up (bound {bound_kib} KiB)"
    if slope_bound is not None and g["growth_kib"] > bound_kib / 2 and \
            g["slope_kib_per_min"] > slope_bound:
        return (f"grew {g['growth_kib']} KiB, still rising {g['slope_kib_per_min']} KiB/min "
                f"(bound {slope_bound} KiB/min)")
    return None
