"""The chaos run's report: figures printed at the end and written as JSON."""
import json
import os


def write(report, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(report, f, indent=2, sort_keys=True, default=str)


def render(report):
    t = report["tasks"]
    k = report["faults"]
    d = report["duplicates"]
    lines = [
        "",
        "== chaos run report ==",
        f"seed {report['seed']}, chaos {report['chaos_seconds']} s, "
        f"rate {report['rate_per_s']}/s, lease {report['lease_ms']} ms, "
        f"skew worker {report['skew']['worker']} batond {report['skew']['batond']}",
        f"tasks produced {t['produced']} (acknowledged {t['acknowledged']}, enqueue retries "
        f"{t['enqueue_retries']}); done {t['done']}, dead {t['dead']}, still queued "
        f"{t['queued']}, missing {t['missing']}, inconsistent {t['inconsistent']}, "
        f"unknown {t['unknown']}",
        f"dead by reason: {t['dead_by_kind']}",
        f"executions {d['executions']} (interrupted {d['interrupted']}); re-runs after a planned "
        f"failure {d['planned_retries']}; duplicates {d['duplicates']} by cause {d['by_cause']}",
        f"faults: worker kills {k['worker_kills']}, batond kills {k['batond_kills']}, "
        f"redis restarts {k['redis_restarts']}, network cuts {k['network_cuts']}; "
        f"unexpected exits {k['unexpected_exits']}",
        f"acknowledged before a redis kill -9: {t['acked_before_redis_kill']}, lost: "
        f"{t['lost_after_redis_kill']}",
        f"drain: {report['drain']['seconds']} s (limit {report['drain']['limit_s']} s)",
        f"lease reclaims {report['reclaims']['count']}: max delay past lease end "
        f"{report['reclaims']['max_late_ms']} ms (p50 {report['reclaims']['p50_late_ms']} ms); "
        f"worker kill -> reclaim max {report['reclaims']['kill_to_reclaim_max_ms']} ms; "
        f"{report['reclaims']['later_than_1500ms']} later than 1.5 s past the lease end "
        f"({report['reclaims']['later_than_1500ms_without_fault']} with no Redis outage or batond "
        f"kill around them)",
        f"collector: {report['collector'].get('collector_same_state')}/"
        f"{report['collector'].get('final_tasks')} final tasks in the same state "
        f"(coverage {report['collector'].get('coverage')})",
    ]
    if report["failures"]:
        lines.append(f"FAILED: {len(report['failures'])} invariant violation(s):")
        lines += [f"  - {f}" for f in report["failures"][:40]]
        if len(report["failures"]) > 40:
            lines.append(f"  ... {len(report['failures']) - 40} more in report.json")
        lines.append(f"replay: CHAOS_SEED={report['seed']} "
                     f"CHAOS_SECONDS={report['chaos_seconds']} tests/chaos/run.sh")
    else:
        lines.append("OK: every task accounted for, no unexplained duplicate")
    return "\n".join(lines)
