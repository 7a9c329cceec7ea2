"""The protocol v1 client (library `baton`, keys 'baton:{NS}:...'), kept only for the rolling
upgrade test (test_upgrade_coexistence.py): a v1-era producer or worker that still runs while v2
is loaded next to it. This is tests/protocol/baton_protocol.py as it was before protocol v2,
unchanged but for where the library comes from (contract/legacy/baton_v1.lua). New code speaks v2
through baton_protocol.py.

Replies are bytes (use a redis.Redis without decode_responses); payload and extra stay bytes,
everything else is decoded to str.
"""

import dataclasses
import json
import pathlib
import time

LIBRARY_VERSION = "1"
DEFAULT_EVENTS_MAXLEN = 100000
DEFAULT_RETENTION_S = 86400
DEFAULT_BASE_MS = 2000
DEFAULT_MAX_MS = 600000
WAKEUP_CHANNEL = "baton:wakeup"
NAMESPACES_KEY = "baton:namespaces"

LEGACY_LIBRARY = (pathlib.Path(__file__).resolve().parents[2] / "contract" / "legacy" /
                  "baton_v1.lua")


class Keys:
    """Every key of one namespace (docs/keyspace.md): 'baton:{NS}:...'."""

    def __init__(self, ns):
        self.ns = ns
        self.prefix = "baton:{" + ns + "}:"

    def stream(self, task_type):
        return self.prefix + "stream:" + task_type

    def scheduled(self, task_type):
        return self.prefix + "scheduled:" + task_type

    def dead(self, task_type):
        return self.prefix + "dead:" + task_type

    def tasks(self):
        return self.prefix + "tasks"

    def bodies(self):
        return self.prefix + "bodies"

    def errors(self):
        return self.prefix + "errors"

    def events(self):
        return self.prefix + "events"

    def types(self):
        return self.prefix + "types"

    def done(self, task_id):
        return self.prefix + "done:" + task_id

    def unique(self, key):
        # With key == "" this is the unused key baton_enqueue gets for a task without unique key.
        return self.prefix + "unique:" + key


def library_source():
    """The v1 library, as it was shipped (contract/legacy/baton_v1.lua)."""
    return LEGACY_LIBRARY.read_text(encoding="utf-8")


def load_library(r):
    """FUNCTION LOAD REPLACE of the library (what `baton init` does). Returns the library name."""
    name = r.execute_command("FUNCTION", "LOAD", "REPLACE", library_source())
    return _s(name)


def _s(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    return v


def _b(v):
    if isinstance(v, bytes):
        return v
    return str(v).encode("utf-8")


@dataclasses.dataclass
class TaskSpec:
    """The 10 per-task values of baton_enqueue. payload and extra are JSON object text."""
    id: str
    payload: bytes = b"{}"
    max_retry: int = 3
    delay_seconds: int = 0
    created_at: int = dataclasses.field(default_factory=lambda: int(time.time()))
    execution_timeout: int = None
    extra: bytes = b""
    run_at_ms: int = 0
    unique_key: str = ""
    unique_ttl_s: int = 0

    def argv(self):
        timeout = b"" if self.execution_timeout is None else _b(self.execution_timeout)
        return [_b(self.id), _b(self.payload), _b(self.max_retry), _b(self.delay_seconds),
                _b(self.created_at), timeout, _b(self.extra), _b(self.run_at_ms),
                _b(self.unique_key), _b(self.unique_ttl_s)]


@dataclasses.dataclass
class Entry:
    """One task delivered by baton_dequeue."""
    sid: str
    id: str
    payload: bytes
    max_retry: int
    delay_seconds: int
    created_at: int
    execution_timeout: int  # None when absent
    extra: bytes
    attempt: int  # attempts made before this delivery (0 on the first run)


def task_document(ns, task_type, entry):
    """The contract task JSON (bytes) of a dequeued entry: task_id, namespace, task_type, payload,
    max_retry, delay_seconds, created_at, execution_timeout when present, then every field of
    extra. The payload and extra bytes are spliced in untouched."""
    parts = [b'{"task_id":', json.dumps(entry.id).encode(),
             b',"namespace":', json.dumps(ns).encode(),
             b',"task_type":', json.dumps(task_type).encode(),
             b',"payload":', entry.payload,
             b',"max_retry":', _b(entry.max_retry),
             b',"delay_seconds":', _b(entry.delay_seconds),
             b',"created_at":', _b(entry.created_at)]
    if entry.execution_timeout is not None:
        parts += [b',"execution_timeout":', _b(entry.execution_timeout)]
    inner = entry.extra.strip()
    if inner:
        if not (inner.startswith(b"{") and inner.endswith(b"}")):
            raise ValueError("extra: must be a JSON object")
        inner = inner[1:-1].strip()
        if inner:
            parts += [b",", inner]
    parts.append(b"}")
    return b"".join(parts)


class Baton:
    """Thin wrappers over the functions of one namespace, on one redis.Redis connection."""

    def __init__(self, r, ns, events_maxlen=DEFAULT_EVENTS_MAXLEN):
        self.r = r
        self.ns = ns
        self.keys = Keys(ns)
        self.events_maxlen = events_maxlen

    def _fcall(self, name, keys, args):
        return self.r.execute_command("FCALL", name, len(keys), *keys, *args)

    def version(self):
        return _s(self.r.execute_command("FCALL_RO", "baton_version", 0))

    def enqueue(self, task_type, specs):
        """Returns [(status, detail)]: ('queued', SID), ('scheduled', due_ms),
        ('duplicate', state), ('unique_conflict', holder_id)."""
        k = self.keys
        keys = [k.stream(task_type), k.scheduled(task_type), k.tasks(), k.bodies(), k.events(),
                k.types()]
        args = [task_type, self.events_maxlen, len(specs)]
        for spec in specs:
            keys += [k.done(spec.id), k.unique(spec.unique_key)]
            args += spec.argv()
        reply = self._fcall("baton_enqueue", keys, args)
        return [(_s(status), detail if isinstance(detail, int) else _s(detail))
                for status, detail in reply]

    def dequeue(self, task_type, group, consumer, count):
        """Returns ([Entry], last_id)."""
        k = self.keys
        keys = [k.stream(task_type), k.tasks(), k.events(), k.bodies(), k.errors(),
                k.dead(task_type)]
        flat, last_id = self._fcall("baton_dequeue", keys,
                                    [group, consumer, count, self.events_maxlen])
        entries = []
        for i in range(0, len(flat), 9):
            v = flat[i:i + 9]
            timeout = _s(v[6])
            entries.append(Entry(sid=_s(v[0]), id=_s(v[1]), payload=v[2], max_retry=int(v[3]),
                                 delay_seconds=int(v[4]), created_at=int(v[5]),
                                 execution_timeout=int(timeout) if timeout else None,
                                 extra=v[7], attempt=int(v[8])))
        return entries, _s(last_id)

    def ack(self, task_type, group, done, consumer, retention_s=DEFAULT_RETENTION_S):
        """done: [(id, SID)]. Returns ['done' | 'stale_done' | 'gone']."""
        k = self.keys
        keys = [k.stream(task_type), k.scheduled(task_type), k.tasks(), k.events(), k.errors(),
                k.bodies()] + [k.done(task_id) for task_id, _ in done]
        args = [group, retention_s, self.events_maxlen, len(done)]
        for task_id, sid in done:
            args += [task_id, sid]
        args.append(consumer)
        return [_s(s) for s in self._fcall("baton_ack", keys, args)]

    def _fail_keys(self, task_type):
        k = self.keys
        return [k.stream(task_type), k.scheduled(task_type), k.dead(task_type), k.tasks(),
                k.bodies(), k.errors(), k.events()]

    def fail(self, task_type, group, task_id, sid, consumer, kind, error, stack="",
             base_ms=DEFAULT_BASE_MS, max_ms=DEFAULT_MAX_MS, jitter=0.0):
        """Returns (outcome, due_or_at_ms, attempt): outcome 'retry', 'dead' or 'stale'."""
        outcome, at, attempt = self._fcall(
            "baton_fail", self._fail_keys(task_type),
            [group, task_id, sid, consumer, kind, error, stack, base_ms, max_ms, repr(jitter),
             self.events_maxlen])
        return _s(outcome), (at if isinstance(at, int) else _s(at)), attempt

    def reclaim(self, task_type, group, min_idle_ms, count, base_ms=DEFAULT_BASE_MS,
                max_ms=DEFAULT_MAX_MS, seed=0, reaper="reaper"):
        """Returns (reclaimed, retried, dead)."""
        return tuple(self._fcall(
            "baton_reclaim", self._fail_keys(task_type),
            [group, min_idle_ms, count, base_ms, max_ms, seed, self.events_maxlen, reaper]))

    def extend(self, task_type, group, consumer, sids):
        """Returns the SIDs still held by consumer."""
        reply = self._fcall("baton_extend", [self.keys.stream(task_type)],
                            [group, consumer, *sids])
        return [_s(s) for s in reply]

    def promote(self, task_type, limit=100):
        """Returns (promoted, next_due_ms or -1, now_ms)."""
        k = self.keys
        keys = [k.scheduled(task_type), k.stream(task_type), k.tasks(), k.bodies(), k.events()]
        return tuple(self._fcall("baton_promote", keys, [limit, self.events_maxlen]))

    def cancel(self, task_type, task_id, retention_s=DEFAULT_RETENTION_S):
        k = self.keys
        keys = [k.stream(task_type), k.scheduled(task_type), k.tasks(), k.bodies(), k.events(),
                k.done(task_id), k.errors()]
        return _s(self._fcall("baton_cancel", keys, [task_id, retention_s, self.events_maxlen]))

    def dlq_replay(self, task_type, task_id, payload=b""):
        """Returns the new SID."""
        k = self.keys
        keys = [k.dead(task_type), k.stream(task_type), k.tasks(), k.bodies(), k.events()]
        return _s(self._fcall("baton_dlq_replay", keys, [task_id, payload, self.events_maxlen]))

    def dlq_delete(self, task_type, task_id, retention_s=DEFAULT_RETENTION_S):
        k = self.keys
        keys = [k.dead(task_type), k.tasks(), k.bodies(), k.errors(), k.events(),
                k.done(task_id)]
        return _s(self._fcall("baton_dlq_delete", keys, [task_id, retention_s,
                                                         self.events_maxlen]))

    # Reading state (docs/protocol.md, "Reading state"): no function needed.

    def record(self, task_id):
        """(state, type, attempt, sid) of a live task, or None."""
        rec = self.r.hget(self.keys.tasks(), task_id)
        if rec is None:
            return None
        state, task_type, attempt, sid = _s(rec).split("|", 3)
        return state, task_type, int(attempt), sid

    def final_record(self, task_id):
        """The done / cancelled / deleted marker as a dict, or None."""
        v = self.r.get(self.keys.done(task_id))
        return None if v is None else json.loads(v)

    def body(self, task_id):
        """The body of a task that is not in a stream, as a dict of str, or None."""
        v = self.r.hget(self.keys.bodies(), task_id)
        return None if v is None else json.loads(v)

    def errors(self, task_id):
        v = self.r.hget(self.keys.errors(), task_id)
        return None if v is None else json.loads(v)

    def events(self, task_id=None):
        """Events as dicts of str (with 'event_id'), oldest first, optionally of one task."""
        out = []
        for eid, fields in self.r.xrange(self.keys.events()):
            e = {_s(f): _s(v) for f, v in fields.items()}
            e["event_id"] = _s(eid)
            if task_id is None or e["id"] == task_id:
                out.append(e)
        return out
