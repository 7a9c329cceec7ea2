"""The reference model of the Baton protocol v2 and the operations of the model-based test
(test_protocol_model.py).

Model: a plain-Python description of what every transition of docs/protocol.md must write, kept
small on purpose (dicts of tasks, stream entries, consumer groups with their pending entries,
leases, unique keys, final states, expected events). Each operation method takes the reply Redis
gave, checks it against the model (raising Mismatch with a readable message), then updates the
model. Values only Redis can know (new stream ids, due / death times in server ms) are learned from
the replies and then checked for consistency (e.g. a new SID is after every SID generated before).

World: the Redis side: one namespace on a real redis-server, the library loaded (optionally a
mutant of it, see MUTANTS), the virtual clock applied to Redis, and check(), which
compares every key of the namespace with the model after each step.

The clock. Functions read the server's TIME (docs/adr/0003-server-clock.md), which cannot be faked.
So time is virtual and moves in ticks of TICK_MS = 20 s, only when the test says so
("time passes k ticks"); nothing time-bearing ever falls due on its own during an example:
- leases are 20, 40 or 60 s (or the namespace's lease_ms, 30 or 50 s per example): an example runs
  for well under a second of real time, so a lease never runs out by itself. When k ticks pass,
  every pending entry's delivery time in the consumer group is set to its virtual age with
  XCLAIM <holder> 0 SID IDLE <ms> JUSTID (holder and delivery count kept), exactly as
  ProtocolTestCase.set_idle does, so Redis' own lease arithmetic (idle >= lease_ms of the holder)
  sees the virtual time. Virtual ages are whole ticks: a lease end either falls on one (then the
  lease has run out, and real drift only adds to the idle time) or lies at least 10 s from it,
  far more than an example's real run time (checked: EXAMPLE_REAL_TIME_LIMIT_S).
  A pending entry whose stream entry is gone (a "ghost", e.g. after a stale ack) cannot be XCLAIMed
  (Redis 7 drops it from the PEL), so it keeps the age it had: the model freezes it too.
- delays and retries: enqueue delays of 20 or 40 s, run_at_ms in the past (immediate) or in
  2100 (never due); retry backoff base 0 (due at once, deterministic) or 12 s with a cap of 24 s and
  any jitter, so a retry is due after 1 tick (12..15 s) or 2 ticks (24..30 s), never near a tick
  boundary. When ticks pass, every scheduled member gets the score now + its remaining virtual
  time (ZADD XX), due ones a score <= now.
- done_retention_s and dlq_retention_s keep their (long) defaults; dlq_max is 100000 or 2 per
  example (the cap drops the oldest dead tasks: exercised).
"""

import dataclasses
import json
import math
import os
import re

import baton_protocol as bp

NS = "model"
TYPES = ("alpha", "beta")
GROUP = "baton"
RESCUE_GROUP = "baton.rescue"
# Simulated workers: consumer names per group. Consumers of the rescue group only work while a
# rescue is in progress; the group's own consumers are stopped during a rescue (docs/rescue.md).
WORKERS = {GROUP: ("w1", "w2", "w3"), RESCUE_GROUP: ("r1", "r2")}
TICK_MS = 20000
LEASES_MS = (0, 20000, 40000, 60000)  # a worker's lease_ms; 0 = the namespace's
NAMESPACE_LEASES_MS = (30000, 50000)
DLQ_MAX_CHOICES = (100000, 2)
RETRY_BASES_MS = (0, 12000)
RETRY_MAX_MS = 24000
FAR_FUTURE_MS = 4102444800000  # run_at_ms in 2100: never due within a test
REAPER = "reaper"
CREATED = 1722489600
UNIQUE_TTL_S = 3600
FINAL_STATES = ("done", "cancelled", "deleted", "dropped")
LIVE_STATES = ("queued", "scheduled", "retry", "dead")
# Real time an example may take before the clock arithmetic above could be off (the nearest lease
# end or due time is at least 10 s of real time away).
EXAMPLE_REAL_TIME_LIMIT_S = 8.0

# Deliberate bugs for the self-check (BATON_MODEL_MUTANT=name): (file, text, replacement).
MUTANTS = {
    # ack forgets to XACK: the acked entry stays pending (its lease never ends).
    "ack_keeps_lease": ("40-ack.lua", "  call_many2('XACK', stream, group, sids)\n", "\n"),
    # reclaim ignores the holder's lease length: takes back live leases.
    "reclaim_live": ("60-reclaim.lua",
                     "call('XPENDING', k.stream, group, 'IDLE', lease, '-', '+', count - x, name)",
                     "call('XPENDING', k.stream, group, 'IDLE', 0, '-', '+', count - x, name)"),
    # cancel does not look for a holder: cancels a running task.
    "cancel_active": ("90-cancel.lua", "    if owner then\n", "    if false then\n"),
    # reclaim without the rescue fix: an expired lease in one group takes the task from the
    # live holder another group (the rescue's) delivered it to.
    "reclaim_ignores_rescue_holder": ("60-reclaim.lua", "rsid == sid and #groups > 1 and",
                                      "rsid == sid and false and"),
    # dlq_replay leaves the task in the dead-letter set too.
    "replay_keeps_dead": ("91-dlq-replay.lua", "  call('ZREM', k.dead, id)\n", "\n"),
}


def library_source(mutant=None):
    """The library, with one deliberate bug when mutant names one of MUTANTS."""
    if not mutant:
        return bp.library_source()
    name, old, new = MUTANTS[mutant]
    files = sorted(bp.FUNCTIONS_DIR.glob("*.lua"), key=lambda p: p.name.encode())
    out = []
    for p in files:
        text = p.read_text(encoding="utf-8")
        if p.name == name:
            if old not in text:
                raise ValueError(f"mutant {mutant}: text not found in {name}")
            text = text.replace(old, new, 1)
        out.append(text)
    return "".join(out)


class Mismatch(AssertionError):
    """Redis disagrees with the model (or a protocol promise was broken)."""


def expect(condition, message):
    if not condition:
        raise Mismatch(message)


def sid_key(sid):
    ms, seq = sid.split("-")
    return int(ms), int(seq)


def backoff_ms(n, base, cap, jitter):
    """docs/protocol.md, Conventions (the Lua's arithmetic, in doubles)."""
    exp = min(base * 2.0 ** (n - 1), cap)
    return int(exp + math.floor(jitter * exp / 4))


def seeded_jitter(seed, i):
    """functions/00-header.lua seeded_jitter: the jitter of reclaim's i-th entry."""
    x = (seed + i * 7919) % 2147483646 + 1
    x = (x * 16807) % 2147483647
    x = (x * 16807) % 2147483647
    return (x - 1) / 2147483646


def due_ticks(delay_ms):
    """Ticks after which a delay is over. The delays used (0, 12..15 s, 24..30 s) lie at least
    4 s from a tick boundary, and at least 12 s of real time ahead when they are set."""
    return math.ceil(delay_ms / TICK_MS)


@dataclasses.dataclass
class Task:
    id: str
    type: str
    state: str  # queued | scheduled | retry | dead | done | cancelled | deleted | dropped
    payload: bytes
    max_retry: int
    attempt: int = 0  # the record's ATTEMPT (runs made and failed)
    sid: str = ""  # queued: its stream entry
    vdue: float = None  # scheduled / retry: due at this virtual tick (math.inf: never)
    death_ms: int = None  # dead: its score in dead:TYPE
    errors: int = 0  # the error counter (HGET errors ID), 0 = no history

    def record(self):
        return f"{self.state}|{self.type}|{self.attempt}|{self.sid}"


@dataclasses.dataclass
class Pending:
    consumer: str
    vdeliv: int  # virtual tick of the delivery (or of the last extend)
    zombie: bool = False  # its holder stopped (rescue): nobody heartbeats it, it is no live lease
    frozen_idle_ms: int = None  # a ghost (stream entry gone): the idle it keeps


@dataclasses.dataclass
class Group:
    last: str = "0-0"
    pel: dict = dataclasses.field(default_factory=dict)  # sid -> Pending


@dataclasses.dataclass
class Stream:
    entries: dict = dataclasses.field(default_factory=dict)  # sid -> (id, attempt)
    groups: dict = dataclasses.field(default_factory=dict)  # name -> Group
    last_generated: str = "0-0"
    exists: bool = False
    rescue: str = None  # the handover id while a rescue is in progress
    leases: dict = dataclasses.field(default_factory=dict)  # consumer -> lease_ms


@dataclasses.dataclass
class Spec:
    """One task of an enqueue call, as the test drew it."""
    id: str
    payload: bytes
    max_retry: int
    when: str  # now | past | delay20 | delay40 | far
    unique_key: str = ""

    def task_spec(self):
        delay, run_at = 0, 0
        if self.when == "delay20":
            delay = 20
        elif self.when == "delay40":
            delay = 40
        elif self.when == "past":
            run_at = 1
        elif self.when == "far":
            run_at = FAR_FUTURE_MS
        return bp.TaskSpec(id=self.id, payload=self.payload, max_retry=self.max_retry,
                           delay_seconds=delay, created_at=CREATED, run_at_ms=run_at,
                           unique_key=self.unique_key,
                           unique_ttl_s=UNIQUE_TTL_S if self.unique_key else 0)

    def vdelay(self):
        return {"now": None, "past": None, "delay20": 1, "delay40": 2, "far": math.inf}[self.when]


def event(ttype, frm, to, worker, pairs, error=""):
    """An events entry in comparable form: ids and attempts as sorted (id, attempt) pairs."""
    return (ttype, frm, to, worker, tuple(sorted((i, str(a)) for i, a in pairs)), error)


LEASE_EXPIRED = re.compile(r"^lease expired at \d+ \(-?\d+ ms ago\) on consumer (\S+)$")


def normalize_error(error):
    """Errors with server times in them, reduced to what the model knows."""
    m = LEASE_EXPIRED.match(error)
    if m:
        return f"lease expired on consumer {m.group(1)}"
    return error


class Model:
    def __init__(self, namespace_lease_ms=30000, dlq_max=100000):
        self.namespace_lease_ms = namespace_lease_ms
        self.dlq_max = dlq_max
        self.vnow = 0
        self.tasks = {}  # id -> Task (every id ever accepted, final ones too)
        self.streams = {t: Stream() for t in TYPES}
        self.unique = {}  # unique key -> holder id
        self.types = set()
        self.events = []  # expected events entries of the current step
        # (type, group, consumer) -> [(id, sid)] a worker received and did not ack or fail yet
        self.memory = {}

    # Helpers

    def live(self, task_id, ttype=None):
        t = self.tasks.get(task_id)
        if t is None or t.state not in LIVE_STATES:
            return None
        if ttype is not None and t.type != ttype:
            return None
        return t

    def lease_of(self, stream, consumer):
        return stream.leases.get(consumer, self.namespace_lease_ms)

    def idle_ms(self, pending):
        if pending.frozen_idle_ms is not None:
            return pending.frozen_idle_ms
        return (self.vnow - pending.vdeliv) * TICK_MS

    def expired(self, stream, pending):
        return self.idle_ms(pending) >= self.lease_of(stream, pending.consumer)

    def live_holders(self, ttype, sid):
        """(group, consumer) of every live lease on sid: pending, not a zombie, not run out."""
        stream = self.streams[ttype]
        out = []
        for gname, g in stream.groups.items():
            p = g.pel.get(sid)
            if p and not p.zombie and not self.expired(stream, p):
                out.append((gname, p.consumer))
        return out

    def delete_entry(self, ttype, sid):
        """The stream entry goes; entries still pending for it become ghosts (frozen idle)."""
        stream = self.streams[ttype]
        if stream.entries.pop(sid, None) is None:
            return
        for g in stream.groups.values():
            p = g.pel.get(sid)
            if p and p.frozen_idle_ms is None:
                p.frozen_idle_ms = self.idle_ms(p)

    def ack_everywhere(self, ttype, sid):
        for g in self.streams[ttype].groups.values():
            g.pel.pop(sid, None)

    def new_sid(self, ttype, sid, what):
        stream = self.streams[ttype]
        expect(re.fullmatch(r"\d+-\d+", sid or ""), f"{what}: {sid!r} is no stream id")
        expect(sid_key(sid) > sid_key(stream.last_generated),
               f"{what}: new SID {sid} is not after {stream.last_generated}")
        stream.last_generated = sid
        stream.exists = True

    def forget(self, worker, task_id, sid):
        """The worker (type, group, consumer) acked or failed what it got: it forgets it."""
        held = self.memory.get(worker, [])
        if (task_id, sid) in held:
            held.remove((task_id, sid))

    def finish(self, t, state):
        t.state = state
        t.sid, t.vdue, t.death_ms = "", None, None
        if state != "dead":
            t.errors = 0

    # Transitions. Each checks the reply Redis gave, then moves the model.

    def enqueue(self, ttype, specs, reply, now_before):
        expect(len(reply) == len(specs), f"enqueue: {len(reply)} statuses for {len(specs)} tasks")
        stream = self.streams[ttype]
        seen = {}
        queued_pairs, scheduled_pairs = [], []
        for spec, (status, detail) in zip(specs, reply):
            t = self.tasks.get(spec.id)
            if spec.id in seen:
                want = ("duplicate", seen[spec.id])
            elif t is not None:
                want = ("duplicate", t.state)
            elif spec.unique_key and spec.unique_key in self.unique:
                want = ("unique_conflict", self.unique[spec.unique_key])
            else:
                vdelay = spec.vdelay()
                want = ("queued" if vdelay is None else "scheduled", None)
            expect(status == want[0] and (want[1] is None or detail == want[1]),
                   f"enqueue {spec.id}: Redis says {(status, detail)}, the model {want}")
            if want[1] is not None:
                continue
            if spec.unique_key:
                self.unique[spec.unique_key] = spec.id
            t = Task(spec.id, ttype, status, spec.payload, spec.max_retry)
            self.tasks[spec.id] = t
            seen[spec.id] = status
            if status == "queued":
                self.new_sid(ttype, detail, f"enqueue {spec.id}")
                t.sid = detail
                stream.entries[detail] = (spec.id, 0)
                queued_pairs.append((spec.id, 0))
            else:
                expect(isinstance(detail, int) and detail > now_before,
                       f"enqueue {spec.id}: due {detail} is not in the future ({now_before})")
                t.vdue = self.vnow + spec.vdelay()
                scheduled_pairs.append((spec.id, 0))
        if queued_pairs:
            self.events.append(event(ttype, "new", "queued", "", queued_pairs))
        if scheduled_pairs:
            self.events.append(event(ttype, "new", "scheduled", "", scheduled_pairs))
        if queued_pairs or scheduled_pairs:
            self.types.add(ttype)

    def _read(self, ttype, group, consumer, count):
        """XREADGROUP ... > of up to count entries and the judgement of each (baton_v2_dequeue
        and baton_v2_start judge alike). Returns (read SIDs, delivered, stale SIDs); delivered:
        (sid, id, payload, max_retry, attempt)."""
        stream = self.streams[ttype]
        stream.exists = True
        g = stream.groups.setdefault(group, Group())
        waiting = sorted((s for s in stream.entries if sid_key(s) > sid_key(g.last)),
                         key=sid_key)
        read = waiting[:count]
        want, stale = [], []
        for sid in read:
            task_id, attempt = stream.entries[sid]
            t = self.live(task_id, ttype)
            if t and t.state == "queued" and t.sid == sid:
                want.append((sid, task_id, t.payload, t.max_retry, attempt))
            else:
                stale.append(sid)  # a stale copy (no model path makes one)
        return read, want, stale

    def _deliver(self, ttype, group, consumer, lease_ms, read, want, stale):
        stream = self.streams[ttype]
        g = stream.groups[group]
        for sid in stale:
            task_id, attempt = stream.entries[sid]
            self.delete_entry(ttype, sid)
            self.events.append(event(ttype, "queued", "deleted", consumer,
                                     [(task_id, attempt)], f"stale copy {sid}"))
        for sid, task_id, *_ in want:
            t = self.tasks[task_id]
            expect(t.state not in FINAL_STATES, f"dequeue delivered {task_id}, which is {t.state}")
            holders = self.live_holders(ttype, sid)
            expect(not holders, f"{group}/{consumer} got {task_id} ({sid}), whose live lease is "
                   f"held by {holders}")
            g.pel[sid] = Pending(consumer, self.vnow)
            self.memory.setdefault((ttype, group, consumer), []).append((task_id, sid))
        if read:
            g.last = read[-1]
        if want:
            stream.leases[consumer] = lease_ms or self.namespace_lease_ms
            self.events.append(event(ttype, "queued", "active", consumer,
                                     [(w[1], w[4] + 1) for w in want]))

    def dequeue(self, ttype, group, consumer, count, lease_ms, delivery):
        stream = self.streams[ttype]
        read, want, stale = self._read(ttype, group, consumer, count)
        got = [(e.sid, e.id, e.payload, e.max_retry, e.attempt) for e in delivery.entries]
        expect(got == want, f"dequeue {group}/{consumer} count {count}: Redis delivered "
               f"{[(g_[0], g_[1], g_[4]) for g_ in got]}, the model expects "
               f"{[(w[0], w[1], w[4]) for w in want]}")
        if want:
            expect(delivery.last_id == "" and delivery.lease_deadline_ms > 0,
                   f"dequeue: reply {delivery.last_id!r}, {delivery.lease_deadline_ms}")
        else:
            if read:
                last = read[-1]
            else:
                present = sorted(stream.entries, key=sid_key)
                last = present[-1] if present else "0-0"
            expect((delivery.last_id, delivery.lease_deadline_ms) == (last, 0),
                   f"dequeue delivered nothing: reply ({delivery.last_id}, "
                   f"{delivery.lease_deadline_ms}), the model expects ({last}, 0)")
        self._deliver(ttype, group, consumer, lease_ms, read, want, stale)

    def fast_dequeue(self, ttype, group, consumer, count, lease_ms, reads, refused):
        """The fast read path: the worker's own XREADGROUP (reads: what Baton.read returned),
        then baton_v2_start with every entry read (refused: its reply), when it read any."""
        read, want, stale = self._read(ttype, group, consumer, count)
        got = [(r[0], r[1], r[3].payload, r[3].max_retry, r[3].attempt) for r in reads]
        expect(got == [(w[0], w[1], w[2], w[3], w[4]) for w in want] and not stale,
               f"XREADGROUP {group}/{consumer} count {count}: read "
               f"{[(g_[0], g_[1], g_[4]) for g_ in got]}, the model expects "
               f"{[(w[0], w[1], w[4]) for w in want]} (stale {stale})")
        expect(refused == stale, f"start {group}/{consumer}: refused {refused}, the model "
               f"{stale}")
        self._deliver(ttype, group, consumer, lease_ms, read, want, stale)

    def ack(self, ttype, group, consumer, pairs, reply):
        stream = self.streams[ttype]
        want = []
        seen = set()
        done_pairs = []
        for task_id, sid in pairs:
            t = self.live(task_id, ttype)
            if t is None or task_id in seen:
                want.append("gone")
            elif t.state == "queued" and t.sid == sid:
                want.append("done")
                done_pairs.append((task_id, t.attempt + 1))
            else:
                want.append("stale_done")
            seen.add(task_id)
        expect(reply == want, f"ack {group}/{consumer} {pairs}: Redis says {reply}, the model "
               f"{want}")
        g = stream.groups.get(group)
        for task_id, sid in pairs:
            if g:
                g.pel.pop(sid, None)
            self.delete_entry(ttype, sid)
        seen = set()
        stale = {}  # the record's state -> (id, attempt): one events entry per state
        for (task_id, sid), status in zip(pairs, want):
            self.forget((ttype, group, consumer), task_id, sid)
            if status == "gone" or task_id in seen:
                continue
            seen.add(task_id)
            t = self.tasks[task_id]
            if status == "stale_done":
                stale.setdefault(t.state, []).append((task_id, t.attempt))
                if t.state == "queued":
                    self.delete_entry(ttype, t.sid)  # the newer copy (not acked anywhere)
            self.finish(t, "done")
        for state, stale_pairs in stale.items():
            self.events.append(event(ttype, state, "done", consumer, stale_pairs))
        if done_pairs:
            self.events.append(event(ttype, "active", "done", consumer, done_pairs))

    def _fail_entry(self, ttype, t, sid, groups, kind, message, worker, event_worker, base,
                    cap, jitter, at_ms):
        """fail_entry of functions/00-header.lua. Returns (outcome, n)."""
        stream = self.streams[ttype]
        for gname in groups:
            if gname in stream.groups:
                stream.groups[gname].pel.pop(sid, None)
        self.delete_entry(ttype, sid)
        n = t.attempt + 1
        t.errors += 1
        t.attempt, t.sid = n, ""
        if kind not in ("non_retryable", "malformed") and n < 1 + t.max_retry:
            t.state = "retry"
            t.vdue = self.vnow + due_ticks(backoff_ms(n, base, cap, jitter))
            outcome = "retry"
        else:
            t.state, t.death_ms = "dead", at_ms
            outcome = "dead"
        self.events.append(event(ttype, "active", outcome, event_worker, [(t.id, n)], message))
        return outcome, n

    def cap_dead(self, ttype):
        dead = sorted((t.death_ms, t.id) for t in self.tasks.values()
                      if t.state == "dead" and t.type == ttype)
        over = len(dead) - self.dlq_max
        if over <= 0:
            return
        pairs = []
        for _, task_id in dead[:over]:
            t = self.tasks[task_id]
            pairs.append((task_id, t.attempt))
            self.finish(t, "dropped")
        self.events.append(event(ttype, "dead", "dropped", "", pairs,
                                 f"dead-letter queue over its cap of {self.dlq_max} tasks"))

    def fail(self, ttype, group, consumer, task_id, sid, kind, message, base, jitter, reply):
        t = self.live(task_id, ttype)
        self.forget((ttype, group, consumer), task_id, sid)
        if not (t and t.state == "queued" and t.sid == sid):
            expect(tuple(reply) == ("stale", "", 0),
                   f"fail {task_id} ({sid}) by {consumer}: Redis says {reply}, the model stale")
            return
        outcome, at, n = reply
        want, want_n = self._fail_entry(ttype, t, sid, [group], kind, message, consumer,
                                        consumer, base, RETRY_MAX_MS, jitter, at)
        expect((outcome, n) == (want, want_n),
               f"fail {task_id} ({sid}) kind {kind}: Redis says {(outcome, n)}, the model "
               f"{(want, want_n)}")
        if want == "dead":
            self.cap_dead(ttype)

    def reclaim(self, ttype, count, base, seed, reply):
        stream = self.streams[ttype]
        expired, remaining = [], []
        for gname in sorted(stream.groups):  # XINFO GROUPS order: by name
            g = stream.groups[gname]
            by_consumer = {}
            for sid, p in g.pel.items():
                by_consumer.setdefault(p.consumer, []).append(sid)
            for consumer in sorted(by_consumer):  # XINFO CONSUMERS order: by name
                for sid in sorted(by_consumer[consumer], key=sid_key):
                    p = g.pel[sid]
                    if self.expired(stream, p):
                        expired.append((sid, gname, consumer))
                    else:
                        remaining.append(self.lease_of(stream, consumer) - self.idle_ms(p))
        cut = len(expired) >= count  # Lua: once x reaches count the next deadline is now
        expired = expired[:count]
        retried = dead = 0
        for i, (sid, gname, consumer) in enumerate(expired, start=1):
            if sid not in stream.entries:
                self.ack_everywhere(ttype, sid)
                continue
            task_id, attempt = stream.entries[sid]
            t = self.live(task_id, ttype)
            if t and t.state == "queued" and t.sid == sid:
                elsewhere = [n for n, g in stream.groups.items() if n != gname and sid in g.pel
                             and not self.expired(stream, g.pel[sid])]
                if elsewhere:
                    # Another group (the rescue's) delivered it again: the lease is that
                    # holder's now, the expired entry only leaves its group (docs/rescue.md).
                    stream.groups[gname].pel.pop(sid)
                    continue
                outcome, _ = self._fail_entry(
                    ttype, t, sid, list(stream.groups), "lease_expired",
                    f"lease expired on consumer {consumer}", consumer, REAPER, base,
                    RETRY_MAX_MS, seeded_jitter(seed, i), reply[4])
                if outcome == "retry":
                    retried += 1
                else:
                    dead += 1
            else:
                self.ack_everywhere(ttype, sid)
                self.delete_entry(ttype, sid)
                self.events.append(event(ttype, "queued", "deleted", REAPER,
                                         [(task_id, attempt)], f"stale copy {sid}"))
        got_reclaimed, got_retried, got_dead, next_deadline, now = reply
        live_leases = sorted((t.id, t.sid, h) for t in self.tasks.values()
                             if t.type == ttype and t.state == "queued"
                             for h in self.live_holders(ttype, t.sid))
        expect((got_reclaimed, got_retried, got_dead) == (retried + dead, retried, dead),
               f"reclaim: Redis says reclaimed/retried/dead {reply[:3]}, the model "
               f"{[retried + dead, retried, dead]} (live leases, never to be taken: "
               f"{live_leases})")
        if cut:
            expect(next_deadline == now, f"reclaim cut by count: next {next_deadline} != {now}")
        elif not remaining:
            expect(next_deadline == -1, f"reclaim: next deadline {next_deadline}, the model "
                   f"expects -1 (no live lease)")
        else:
            left = next_deadline - now
            expect(min(remaining) - 5000 <= left <= min(remaining),
                   f"reclaim: next deadline in {left} ms, the model {min(remaining)} ms")
        if dead:
            self.cap_dead(ttype)

    def extend(self, ttype, group, consumer, lease_ms, pairs, reply):
        stream = self.streams[ttype]
        g = stream.groups.get(group)
        want = []
        if g:
            for task_id, sid in pairs:
                t = self.live(task_id, ttype)
                p = g.pel.get(sid)
                if t and t.state == "queued" and t.sid == sid and p and p.consumer == consumer:
                    want.append(sid)
        expect(reply == want, f"extend {group}/{consumer} {pairs}: Redis holds {reply}, the "
               f"model {want}")
        for sid in want:
            p = g.pel[sid]
            p.vdeliv, p.zombie = self.vnow, False
        if want:
            stream.leases[consumer] = lease_ms or self.namespace_lease_ms

    def promote(self, ttype, reply, records):
        """records: the task records Redis holds after the call (to learn the new SIDs)."""
        promoted, next_due, now = reply
        due = [t for t in self.tasks.values() if t.type == ttype and
               t.state in ("scheduled", "retry") and t.vdue <= self.vnow]
        expect(promoted == len(due), f"promote {ttype}: Redis promoted {promoted}, the model "
               f"expects {len(due)}: {[t.id for t in due]}")
        by_state = {}
        new = []
        for t in due:
            rec = records.get(t.id)
            expect(rec is not None and rec.startswith(f"queued|{ttype}|{t.attempt}|"),
                   f"promote: record of {t.id} is {rec!r}")
            sid = rec.rsplit("|", 1)[1]
            new.append((sid, t))
            by_state.setdefault(t.state, []).append((t.id, t.attempt))
        for sid, t in sorted(new, key=lambda x: sid_key(x[0])):
            self.new_sid(ttype, sid, f"promote {t.id}")
            t.state, t.sid, t.vdue = "queued", sid, None
            self.streams[ttype].entries[sid] = (t.id, t.attempt)
        for state, pairs in by_state.items():
            self.events.append(event(ttype, state, "queued", "", pairs))
        left = [t for t in self.tasks.values() if t.type == ttype and
                t.state in ("scheduled", "retry")]
        if not left:
            expect(next_due == -1, f"promote: next due {next_due}, the model expects -1")
        else:
            expect(next_due > now, f"promote: next due {next_due} is not after now {now}")

    def cancel(self, ttype, task_id, reply):
        """reply: the reply, or the error text."""
        t = self.tasks.get(task_id)
        live = t if t and t.state in LIVE_STATES else None
        if live is None:
            expect(reply.startswith("BATON_NOT_FOUND"), f"cancel {task_id}: {reply}")
            return
        if live.type != ttype:
            expect(reply.startswith("BATON_INVALID KEYS[1]"), f"cancel {task_id}: {reply}")
            return
        if live.state == "dead":
            expect(reply.startswith("BATON_CONFLICT"), f"cancel of dead {task_id}: {reply}")
            return
        if live.state == "queued":
            holders = [(g, s.groups[g].pel[live.sid].consumer)
                       for s in [self.streams[ttype]] for g in s.groups
                       if live.sid in s.groups[g].pel]
            if holders:
                expect(reply.startswith("BATON_CONFLICT"),
                       f"cancel of {task_id} held by {holders}: Redis says {reply}")
                return
        expect(reply == "cancelled", f"cancel {task_id} ({live.state}): Redis says {reply}")
        if live.state == "queued":
            self.delete_entry(ttype, live.sid)
        self.events.append(event(ttype, live.state, "cancelled", "", [(task_id, live.attempt)]))
        self.finish(live, "cancelled")

    def dlq_replay(self, ttype, task_id, payload, reply):
        t = self.live(task_id, ttype)
        if not (t and t.state == "dead"):
            expect(reply.startswith("BATON_NOT_FOUND"), f"dlq_replay {task_id}: {reply}")
            return
        self.new_sid(ttype, reply, f"dlq_replay {task_id}")
        if payload:
            t.payload = payload
        t.state, t.attempt, t.sid, t.death_ms = "queued", 0, reply, None
        self.streams[ttype].entries[reply] = (task_id, 0)
        self.events.append(event(ttype, "dead", "queued", "", [(task_id, 0)]))

    def dlq_delete(self, ttype, task_id, reply):
        t = self.live(task_id, ttype)
        if not (t and t.state == "dead"):
            expect(reply.startswith("BATON_NOT_FOUND"), f"dlq_delete {task_id}: {reply}")
            return
        expect(reply == "deleted", f"dlq_delete {task_id}: {reply}")
        self.events.append(event(ttype, "dead", "deleted", "", [(task_id, t.attempt)]))
        self.finish(t, "deleted")

    def rescue_start(self, ttype, reply):
        stream = self.streams[ttype]
        if stream.rescue is not None:
            expect(reply.startswith("BATON_CONFLICT"), f"rescue_start during a rescue: {reply}")
            return
        if not stream.exists or GROUP not in stream.groups:
            expect(reply.startswith("BATON_NOT_FOUND"), f"rescue_start without stream or "
                   f"group: {reply}")
            return
        expect(reply == stream.last_generated,
               f"rescue_start: handover {reply}, the model {stream.last_generated}")
        stream.rescue = reply
        stream.groups[RESCUE_GROUP] = Group()
        g = stream.groups[GROUP]
        if sid_key(g.last) < sid_key(reply):
            g.last = reply
        # The group's workers are stopped for the rescue (docs/rescue.md, runbook step 1): what
        # they held is nobody's live lease any more.
        for p in g.pel.values():
            p.zombie = True
        for consumer in WORKERS[GROUP]:
            self.memory.pop((ttype, GROUP, consumer), None)

    def rescue_finish(self, ttype, force, reply):
        stream = self.streams[ttype]
        handover = stream.rescue
        if handover is None:
            expect(reply.startswith("BATON_NOT_FOUND"), f"rescue_finish without rescue: {reply}")
            return
        h = sid_key(handover)
        r = stream.groups[RESCUE_GROUP]
        undelivered = sum(1 for s in stream.entries if sid_key(r.last) < sid_key(s) <= h)
        pending_le = sum(1 for s in r.pel if sid_key(s) <= h)
        pending_after = len(r.pel) - pending_le
        if not force and undelivered + pending_le + pending_after > 0:
            expect(isinstance(reply, str) and reply.startswith("BATON_CONFLICT"),
                   f"rescue_finish with {undelivered} undelivered, {pending_le} + "
                   f"{pending_after} pending: Redis says {reply}")
            return
        g = stream.groups[GROUP]
        ghosts = [s for s in g.pel if sid_key(s) <= h and s not in stream.entries]
        for s in ghosts:
            del g.pel[s]
        if sid_key(g.last) < h:
            g.last = handover
        expect(list(reply) == [len(ghosts), g.last, undelivered + pending_le],
               f"rescue_finish: Redis says {reply}, the model "
               f"{[len(ghosts), g.last, undelivered + pending_le]}")
        del stream.groups[RESCUE_GROUP]
        stream.rescue = None
        for consumer in WORKERS[RESCUE_GROUP]:
            self.memory.pop((ttype, RESCUE_GROUP, consumer), None)

    def time_passes(self, ticks):
        self.vnow += ticks


class World:
    """The Redis side of the test: one namespace of a real redis-server."""

    def __init__(self, r):
        self.r = r
        self.b = bp.Baton(r, NS)
        self.k = self.b.keys
        self.last_event_id = "0-0"

    def now_ms(self):
        sec, usec = self.r.time()
        return sec * 1000 + usec // 1000

    def call(self, fn, *args, **kwargs):
        """fn's reply, or the text of its error reply (BatonError)."""
        try:
            return fn(*args, **kwargs)
        except bp.BatonError as e:
            return str(e)

    def apply_time(self, model):
        """Makes Redis see the model's virtual time: every pending entry's idle time becomes its
        virtual age (ghosts excepted: see the module docstring), every scheduled member's score
        now + its remaining virtual time."""
        now = self.now_ms()
        pipe = self.b.node().pipeline(transaction=True)  # the namespace's node on a cluster
        for ttype, stream in model.streams.items():
            key = self.k.stream(ttype)
            for gname, g in stream.groups.items():
                for sid, p in g.pel.items():
                    if p.frozen_idle_ms is None:
                        pipe.xclaim(key, gname, p.consumer, 0, [sid],
                                    idle=(model.vnow - p.vdeliv) * TICK_MS, justid=True)
            for t in model.tasks.values():
                if t.type == ttype and t.state in ("scheduled", "retry") and t.vdue != math.inf:
                    score = now + (t.vdue - model.vnow) * TICK_MS
                    pipe.zadd(self.k.scheduled(ttype), {t.id: score}, xx=True)
        pipe.execute()

    def new_events(self):
        """The events entries written since the last call, in comparable form."""
        out = []
        for eid, fields in self.r.xrange(self.k.events(), min="(" + self.last_event_id):
            self.last_event_id = bp._s(eid)
            f = {bp._s(k): bp._s(v) for k, v in fields.items()}
            ids, attempts = f["ids"].split(" "), f["attempts"].split(" ")
            if len(ids) != len(attempts):
                raise Mismatch(f"events entry {eid}: {len(ids)} ids, {len(attempts)} attempts")
            out.append(event(f["type"], f["from"], f["to"], f["worker"], zip(ids, attempts),
                             normalize_error(f["error"])))
        return out

    def check(self, model):
        """Compares every key of the namespace with the model; raises Mismatch."""
        r, k = self.r, self.k
        s = bp._s
        live = {t.id: t for t in model.tasks.values() if t.state in LIVE_STATES}
        final = {t.id: t for t in model.tasks.values() if t.state in FINAL_STATES}

        records = {s(f): s(v) for f, v in r.hgetall(k.tasks()).items()}
        want = {i: t.record() for i, t in live.items()}
        expect(records == want, diff("tasks hash", records, want))

        # Every task in exactly one place, from Redis alone.
        places = {}
        for ttype in TYPES:
            for sid, fields in r.xrange(k.stream(ttype)):
                task_id = s(fields[b"task"]).split("|", 1)[0]
                places.setdefault(task_id, []).append(f"stream:{ttype}")
            for m in r.zrange(k.scheduled(ttype), 0, -1):
                places.setdefault(s(m), []).append(f"scheduled:{ttype}")
            for m in r.zrange(k.dead(ttype), 0, -1):
                places.setdefault(s(m), []).append(f"dead:{ttype}")
        for m in r.zrange(k.done(), 0, -1):
            places.setdefault(s(m), []).append("done")
        twice = {i: p for i, p in places.items() if len(p) != 1}
        expect(not twice, f"tasks in more than one place: {twice}")
        want_places = {}
        for t in model.tasks.values():
            where = {"queued": f"stream:{t.type}", "scheduled": f"scheduled:{t.type}",
                     "retry": f"scheduled:{t.type}", "dead": f"dead:{t.type}"}.get(t.state,
                                                                                   "done")
            want_places[t.id] = [where]
        expect(places == want_places, diff("where each task is", places, want_places))

        for ttype in TYPES:
            stream = model.streams[ttype]
            key = k.stream(ttype)
            entries = {}
            for sid, fields in r.xrange(key):
                parts = s(fields[b"task"]).split("|", 6)
                entries[s(sid)] = (parts[0], int(parts[5]))
            expect(entries == stream.entries, diff(f"stream:{ttype} entries", entries,
                                                   stream.entries))
            expect(bool(r.exists(key)) == stream.exists,
                   f"stream:{ttype} exists: {bool(r.exists(key))}, model {stream.exists}")
            expect(r.xlen(key) == len(stream.entries),
                   f"XLEN stream:{ttype} {r.xlen(key)}, model {len(stream.entries)}")
            groups = {}
            if stream.exists:
                for info in r.xinfo_groups(key):
                    groups[s(info["name"])] = (s(info["last-delivered-id"]), info["pending"])
            want_groups = {n: (g.last, len(g.pel)) for n, g in stream.groups.items()}
            expect(groups == want_groups,
                   diff(f"groups of {ttype} (last delivered, pending)", groups, want_groups))
            for gname, g in stream.groups.items():
                pel = {}
                rows = r.xpending_range(key, gname, "-", "+", 10000)
                for row in rows:
                    pel[s(row["message_id"])] = (s(row["consumer"]), row["time_since_delivered"])
                got = {sid: c for sid, (c, _) in pel.items()}
                want_pel = {sid: p.consumer for sid, p in g.pel.items()}
                expect(got == want_pel, diff(f"pending entries of {ttype}/{gname}", got,
                                             want_pel))
                for sid, p in g.pel.items():
                    idle = pel[sid][1]
                    lease = model.lease_of(stream, p.consumer)
                    expect((idle >= lease) == model.expired(stream, p),
                           f"{ttype}/{gname} {sid}: idle {idle} ms, lease {lease} ms, the model "
                           f"says expired={model.expired(stream, p)} (clock drift?)")
            leases = {s(c): int(v) for c, v in r.hgetall(k.leases(ttype)).items()}
            expect(leases == stream.leases, diff(f"leases:{ttype}", leases, stream.leases))
            now = self.now_ms()
            sched = {s(m): int(sc) for m, sc in r.zrange(k.scheduled(ttype), 0, -1,
                                                        withscores=True)}
            want_sched = {t.id: t.vdue for t in live.values()
                          if t.type == ttype and t.state in ("scheduled", "retry")}
            expect(set(sched) == set(want_sched), diff(f"scheduled:{ttype}", set(sched),
                                                       set(want_sched)))
            for i, vdue in want_sched.items():
                expect((sched[i] <= now) == (vdue <= model.vnow),
                       f"scheduled:{ttype} {i}: score {sched[i]} vs now {now}, the model says "
                       f"due={vdue <= model.vnow}")
            dead = {s(m): int(sc) for m, sc in r.zrange(k.dead(ttype), 0, -1, withscores=True)}
            want_dead = {t.id: t.death_ms for t in live.values()
                         if t.type == ttype and t.state == "dead"}
            expect(dead == want_dead, diff(f"dead:{ttype}", dead, want_dead))
            expect(bool(r.exists(k.rescue(ttype))) == (stream.rescue is not None),
                   f"rescue:{ttype} exists: {bool(r.exists(k.rescue(ttype)))}")

        bodies = {s(f) for f in r.hkeys(k.bodies())}
        want_bodies = {i for i, t in live.items() if t.state != "queued"}
        expect(bodies == want_bodies, diff("bodies", bodies, want_bodies))
        for i, t in live.items():
            if t.state != "queued":
                body = json.loads(r.hget(k.bodies(), i))
                expect(body["payload"].encode() == t.payload and
                       body["max_retry"] == str(t.max_retry), f"body of {i}: {body}")

        errors = {s(f): int(v) for f, v in r.hgetall(k.errors()).items() if b"|" not in f}
        want_errors = {i: t.errors for i, t in live.items() if t.errors}
        expect(errors == want_errors, diff("error counters", errors, want_errors))

        done = {s(m) for m in r.zrange(k.done(), 0, -1)}
        expect(done == set(final), diff("done markers", done, set(final)))
        ended = {s(f): s(v) for f, v in r.hgetall(k.ended()).items()}
        want_ended = {i: f"{t.state}|{t.type}|{t.attempt}|" for i, t in final.items()
                      if t.state != "done"}
        expect(ended == want_ended, diff("ended", ended, want_ended))

        unique = {}
        for key in self.b.node().keys(k.unique("*")):  # the namespace's node on a cluster
            unique[s(key)[len(k.unique("")):]] = s(r.get(key))
        expect(unique == model.unique, diff("unique keys", unique, model.unique))
        types = {s(m) for m in r.smembers(k.types())}
        expect(types == model.types, diff("types", types, model.types))

        got_events = sorted(self.new_events())
        want_events = sorted(model.events)
        model.events = []
        expect(got_events == want_events, diff_lists("events of the step", got_events,
                                                     want_events))


def diff(what, got, want):
    if isinstance(got, dict):
        keys = sorted(set(got) | set(want), key=str)
        lines = [f"  {key}: Redis {got.get(key, '-')!r}, model {want.get(key, '-')!r}"
                 for key in keys if got.get(key, "-") != want.get(key, "-")]
        return f"{what} differ:\n" + "\n".join(lines)
    return f"{what} differ: only in Redis {sorted(got - want)}, only in the model " \
           f"{sorted(want - got)}"


def diff_lists(what, got, want):
    only_got = [e for e in got if e not in want]
    only_want = [e for e in want if e not in got]
    return f"{what} differ:\n  only in Redis: {only_got}\n  only in the model: {only_want}"


def mutant_from_env():
    return os.environ.get("BATON_MODEL_MUTANT") or None
