"""End-of-run accounting of the chaos run: every task the producer was told was written is found
in exactly one state (done, dead with a reason, or still queued), nothing unknown is in Redis, and
every extra execution in the ledger is explained by a fault that interrupted the earlier one.

Inputs: the producer's acknowledged ids, the queue Redis after the drain, the ledger (executions),
the events stream (reclaims: `lease_expired` failures name the consumer that lost the lease and
how late the reaper was), and the chaos log (kills, cuts, Redis outages)."""
import collections
import json
import re

import baton_protocol as bp

LEASE_MESSAGE = re.compile(r"lease expired at (\d+) \((-?\d+) ms ago\) on consumer (\S+)")


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def read_ledger(r):
    """task id -> [execution dict], sorted by start. An execution is one S line and, unless the run
    was cut short, its E line (paired on id, attempt and pid)."""
    runs = collections.defaultdict(list)
    open_runs = {}
    for raw in r.lrange("chaos:ledger", 0, -1):
        tag, task_id, attempt, pid, label, outcome, ms = _s(raw).split(" ")
        key = (task_id, attempt, pid)
        if tag == "S":
            run = {"attempt": int(attempt), "pid": int(pid), "label": label, "start": int(ms),
                   "end": None, "outcome": None}
            runs[task_id].append(run)
            open_runs[key] = run
        else:
            run = open_runs.pop(key, None)
            if run is None:  # an E without its S cannot happen: keep it visible
                run = {"attempt": int(attempt), "pid": int(pid), "label": label, "start": None,
                       "end": int(ms), "outcome": "orphan_end"}
                runs[task_id].append(run)
            else:
                run.update(end=int(ms), outcome=outcome)
    for task_runs in runs.values():
        task_runs.sort(key=lambda run: run["start"] or 0)
    return runs


def read_reclaims(r, ns):
    """task id -> [reclaim dict] from the events stream: failures of kind lease_expired."""
    key = bp.Keys(ns).events()
    out = collections.defaultdict(list)
    last = "-"
    while True:
        chunk = r.xrange(key, min=last, count=5000)
        if last != "-":
            chunk = chunk[1:]
        if not chunk:
            break
        for eid, fields in chunk:
            f = {_s(k): _s(v) for k, v in fields.items()}
            m = LEASE_MESSAGE.search(f.get("error", ""))
            if not m:
                continue
            pid = _consumer_pid(m.group(3))
            for task_id in f["ids"].split(" "):
                out[task_id].append({"ms": int(_s(eid).split("-")[0]), "deadline": int(m.group(1)),
                                     "late_ms": int(m.group(2)), "consumer": m.group(3),
                                     "pid": pid, "to": f["to"], "reaper": f["worker"]})
        last = _s(chunk[-1][0])
    return out


def _consumer_pid(consumer):
    """Consumer names are <service>:<host>:<pid>:<random>:<lang>."""
    parts = consumer.split(":")
    return int(parts[-3]) if len(parts) >= 5 and parts[-3].isdigit() else None


def final_states(r, ns, produced):
    """id -> (state, detail) for every produced id: done, dead, queued/scheduled/retry, missing,
    or inconsistent (found in two places)."""
    keys = bp.Keys(ns)
    baton = bp.Baton(r, ns, check_version=False)
    out = {}
    ids = list(produced)
    pipe = r.pipeline(transaction=False)
    for task_id in ids:
        pipe.hget(keys.tasks(), task_id)
        pipe.zscore(keys.done(), task_id)
        pipe.hget(keys.ended(), task_id)
    replies = pipe.execute()
    for i, task_id in enumerate(ids):
        rec, done, ended = replies[3 * i:3 * i + 3]
        task_type = produced[task_id]["type"]
        if rec is not None and done is not None:
            out[task_id] = ("inconsistent", f"live record {_s(rec)} and in done")
        elif rec is not None:
            state = _s(rec).split("|", 1)[0]
            if state == "dead":
                in_dlq = r.zscore(keys.dead(task_type), task_id) is not None
                history = baton.error_history(task_id)
                last = history[-1] if history else None
                if not in_dlq or not last or not last.get("error"):
                    out[task_id] = ("inconsistent", f"dead, in_dlq={in_dlq}, last error {last}")
                else:
                    kinds = [h.get("kind") for h in history]
                    out[task_id] = ("dead", {"kind": last["kind"], "error": last["error"][:120],
                                             "kinds": kinds})
            else:
                out[task_id] = ("queued", state)
        elif done is not None:
            if ended is not None:
                out[task_id] = ("inconsistent", f"ended {_s(ended)} (nothing cancels in this run)")
            else:
                out[task_id] = ("done", int(done))
        else:
            out[task_id] = ("missing", None)
    return out


def unknown_ids(r, ns, produced):
    """Ids Redis knows (live or final) that the producer never sent."""
    keys = bp.Keys(ns)
    seen = {_s(k) for k in r.hkeys(keys.tasks())}
    seen |= {_s(m) for m in r.zrange(keys.done(), 0, -1)}
    return sorted(seen - set(produced))


def explain_reruns(task_id, runs, reclaims, faults):
    """For each execution that was followed by another one, why it was not the last. Returns
    (causes, problems): causes lists the fault behind each legitimate re-run, problems every
    re-run nothing explains."""
    causes, problems = [], []
    for i, run in enumerate(runs[:-1]):
        if run["outcome"] in ("error", "fatal"):
            continue  # a planned failure: retried by design, not a duplicate
        nxt = runs[i + 1]["start"]
        cause = None
        killed = [k for k in faults["worker_kills"]
                  if k["pid"] == run["pid"] and run["start"] <= k["ms"] <= nxt]
        if killed:
            cause = "worker killed mid-task" if run["end"] is None \
                else "worker killed before its ack"
        else:
            lost = [c for c in reclaims.get(task_id, [])
                    if c["pid"] == run["pid"] and run["start"] <= c["ms"] <= nxt + 1000]
            if lost:
                cause = _lease_cause(run, lost[0], faults)
                if cause is None:
                    problems.append(f"{task_id}: execution by {run['label']} pid {run['pid']} "
                                    f"(attempt {run['attempt']}) lost its lease with no fault "
                                    f"to explain it: {lost[0]}")
                    continue
        if cause is None:
            problems.append(f"{task_id}: executed again after {run['label']} pid {run['pid']} "
                            f"attempt {run['attempt']} ended '{run['outcome']}' at {run['end']}, "
                            f"with no kill and no lease expiry of that execution")
        else:
            causes.append(cause)
    return causes, problems


def _lease_cause(run, reclaim, faults):
    """The fault that made a live worker's lease run out: a cut of its network, or a Redis
    outage, during the run (up to the reclaim)."""
    lo, hi = run["start"], reclaim["ms"]
    for cut in faults["cuts"]:
        if cut["label"] == run["label"] and cut["start"] <= hi and (cut["end"] or hi) >= lo:
            return f"lease expired during network cut ({cut['mode']})"
    for outage in faults["redis_outages"]:
        if outage["start"] <= hi and (outage["end"] or hi) >= lo - 3000:
            return "lease expired during redis restart"
    return None


def late_reclaims(reclaims, faults, lease_ms, limit_ms):
    """Reclaims that came more than limit_ms after the lease ended, each with the faults that
    overlap [lease end - lease, reclaim] (a Redis outage or a batond kill explains lateness)."""
    out = []
    for task_id, items in reclaims.items():
        for c in items:
            if c["late_ms"] <= limit_ms:
                continue
            lo, hi = c["deadline"] - lease_ms, c["ms"]
            around = [f"redis down {o['start']}..{o['end']}" for o in faults["redis_outages"]
                      if o["start"] <= hi and (o["end"] or hi) >= lo]
            around += [f"{k['label']} killed at {k['ms']}" for k in faults["batond_kills"]
                       if lo - 5000 <= k["ms"] <= hi]
            out.append({"task": task_id, **c, "faults": around})
    out.sort(key=lambda c: -c["late_ms"])
    return out


def collector_coverage(db_path, ns, states):
    """How many final (done/dead) tasks the collector's store shows in that same state."""
    import sqlite3
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        rows = dict(con.execute("SELECT task_id, state FROM task_state WHERE ns = ?", (ns,)))
    finally:
        con.close()
    final = {i: s for i, (s, _) in states.items() if s in ("done", "dead")}
    same = sum(1 for i, s in final.items() if rows.get(i) == s)
    differing = {i: (s, rows.get(i)) for i, s in final.items() if rows.get(i) != s}
    return {"final_tasks": len(final), "collector_same_state": same,
            "coverage": round(same / len(final), 4) if final else 1.0,
            "differing_examples": dict(list(differing.items())[:10]),
            "differing": len(differing)}


def dumps(obj):
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
