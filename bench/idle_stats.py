"""Commands an idle Redis processes per second (bench/run_idle.sh).

  idle_stats.py --port PORT --seconds 20 --label "8 workers on 4 types + 1 batond"

Reads INFO stats and commandstats at the start and the end of the window, on one connection
opened before the window. Every command counts, those the functions run inside Redis included
(total_commands_processed counts them too); the measuring INFO at the start is subtracted (the
one at the end is not counted yet when it reads the counters). Prints
  idle: N commands/s (LABEL)
then the per-command rates from the commandstats deltas, and the round trips clients sent, per
command (function name for FCALL), from a MONITOR connection open during the same window (MONITOR
shows the commands that functions run as "lua" clients: those are left out of round trips).
"""

import argparse
import collections
import sys
import threading
import time

import redis


def snapshot(r):
    info = r.info("everything")
    calls = {k[len("cmdstat_"):]: v["calls"] for k, v in info.items() if k.startswith("cmdstat_")}
    return info["total_commands_processed"], calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--label", default="")
    o = ap.parse_args()

    r = redis.Redis(host="127.0.0.1", port=o.port, decode_responses=True)
    mon = redis.Redis(host="127.0.0.1", port=o.port, decode_responses=True).monitor()
    mon.__enter__()  # sends MONITOR, before the window opens
    round_trips = collections.Counter()
    window = {"open": False, "closed": False}

    def listen():
        try:
            for cmd in mon.listen():
                if window["closed"]:
                    return
                if not window["open"] or cmd.get("client_type") == "lua":
                    continue
                words = cmd["command"].split(" ")
                name = words[0].lower()
                if name in ("fcall", "fcall_ro") and len(words) > 1:
                    name += " " + words[1].strip('"')
                round_trips[(name, f"{cmd['client_address']}:{cmd['client_port']}")] += 1
        except Exception:  # the connection closes at the end
            return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    time.sleep(0.5)  # MONITOR is attached

    window["open"] = True
    total0, calls0 = snapshot(r)
    start = time.monotonic()
    time.sleep(o.seconds)
    total1, calls1 = snapshot(r)
    seconds = time.monotonic() - start
    window["closed"] = True

    measuring = 1  # the INFO of the first snapshot
    total = total1 - total0 - measuring
    print(f"idle: {total / seconds:.1f} commands/s ({o.label})")
    print(f"  window {seconds:.1f} s, {total} commands, measuring INFO excluded; "
          f"{r.info('clients')['connected_clients'] - 2} clients connected besides this one "
          f"and MONITOR")
    deltas = {name: calls1.get(name, 0) - calls0.get(name, 0) for name in calls1}
    deltas["info"] = deltas.get("info", 0) - measuring
    print("  per command (commandstats, functions' inner commands included):")
    for name, n in sorted(deltas.items(), key=lambda kv: (-kv[1], kv[0])):
        if n > 0:
            print(f"    {name:<24} {n / seconds:7.2f}/s")
    sent = collections.Counter()
    clients = collections.defaultdict(set)
    own_addr = r.client_info().get("addr")
    for (name, addr), n in round_trips.items():
        if addr == own_addr and name == "info":
            continue
        sent[name] += n
        clients[name].add(addr)
    print(f"  round trips from clients (MONITOR): {sum(sent.values()) / seconds:.2f}/s")
    for name, n in sorted(sent.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"    {name:<32} {n / seconds:7.2f}/s from {len(clients[name])} connections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
