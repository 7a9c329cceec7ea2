"""The chaos schedule: a seeded list of faults over the chaos window, printed before the run so a
failing run can be replayed with the same CHAOS_SEED (the same faults at the same offsets; the
interleaving with the processes' own timing is not reproducible, only the faults are).

Every run has at least one fault of each kind; the rest are drawn with these weights. Faults of
the same kind never overlap (one Redis, one cut per proxy, one batond down at a time), so the
system always has a way to make progress once the fault ends."""
import dataclasses
import random

WEIGHTS = {"kill_worker": 50, "kill_batond": 15, "cut_network": 20, "restart_redis": 15}


@dataclasses.dataclass
class Fault:
    at_s: float  # offset from the start of the chaos window
    kind: str  # kill_worker | kill_batond | cut_network | restart_redis
    target: str  # worker label, batond label, proxy label, or "redis"
    down_s: float  # how long the target stays down / cut
    mode: str = ""  # cut_network: reset | blackhole

    def describe(self):
        extra = f" mode={self.mode}" if self.mode else ""
        return (f"t+{self.at_s:6.2f}s {self.kind:<13} {self.target:<10} "
                f"down {self.down_s:.2f}s{extra}")


def make_schedule(seed, seconds, workers, batonds, proxies, mean_gap_s=2.5):
    rng = random.Random(seed)
    busy_until = {}  # kind/target -> end of the current fault of that kind

    def draw(kind, at):
        if kind == "kill_worker":
            return Fault(at, kind, rng.choice(workers), rng.uniform(0.2, 2.0))
        if kind == "kill_batond":
            return Fault(at, kind, rng.choice(batonds), rng.uniform(0.5, 4.0))
        if kind == "cut_network":
            return Fault(at, kind, rng.choice(proxies), rng.uniform(3.0, 9.0),
                         rng.choice(["reset", "blackhole"]))
        return Fault(at, kind, "redis", rng.uniform(0.3, 3.0))

    def exclusive_key(fault):
        # One Redis outage at a time, one batond down at a time, one cut per proxy; worker kills
        # of one slot do not overlap either.
        return fault.kind if fault.kind in ("restart_redis", "kill_batond") else fault.target

    faults = []
    # One of each kind first, spread over the window, then random ones.
    kinds = list(WEIGHTS)
    rng.shuffle(kinds)
    for i, kind in enumerate(kinds):
        at = seconds * (i + rng.uniform(0.1, 0.7)) / len(kinds)
        faults.append(draw(kind, at))
    at = rng.expovariate(1 / mean_gap_s)
    while at < seconds:
        kind = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
        faults.append(draw(kind, at))
        at += rng.expovariate(1 / mean_gap_s)
    faults.sort(key=lambda f: f.at_s)
    kept = []
    for f in faults:
        key = exclusive_key(f)
        if busy_until.get(key, -1) > f.at_s:
            continue
        # Every fault ends inside the window, so the drain starts with everything healed.
        f.down_s = min(f.down_s, max(0.2, seconds - f.at_s))
        busy_until[key] = f.at_s + f.down_s + 0.5
        kept.append(f)
    return kept
