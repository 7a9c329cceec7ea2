"""Reference Python client of the Baton protocol v2 (library baton_v2), written from the contract
alone: contract/protocol.json (through the generated baton_generated.py) and the contract header
that opens every functions/*.lua file.

It is the model for new SDKs:
- key names come from the generated key patterns (Keys), in one place;
- the KEYS of every call are the generated key kinds of that function, in their order, and its
  ARGV are the generated ARGV names, in their order (Baton._call): a wrapper only names values;
- one thin wrapper per Redis Function (enqueue, dequeue, ack, fail, reclaim, extend, promote,
  cancel, dlq_replay, dlq_delete, configure, rescue_start, rescue_finish, cron_mark, version);
- the library version is checked on every (re)connect of the redis.Redis it is given
  (FCALL_RO baton_v2_version 0), and load_library() loads the library the way `baton init` does;
- task_document() rebuilds the contract task JSON from a dequeued entry without re-serialising the
  payload (its bytes are delivered exactly as the producer wrote them).

Replies are bytes (use a redis.Redis without decode_responses); payload and extra stay bytes,
everything else is decoded to str. Error replies of the library ('BATON_INVALID field: rule', ...)
raise BatonError, a redis ResponseError that also carries the contract code (invalid_argument, ...).
"""

import dataclasses
import json
import pathlib
import re
import time
import typing

import redis
import redis.cluster

import baton_generated as gen

LIBRARY = gen.LIBRARY
LIBRARY_VERSION = gen.VERSION
DEFAULT_BASE_MS = 2000
DEFAULT_MAX_MS = 600000
LEASE_MS_RANGE = (1000, 86400000)  # lease_ms of dequeue and extend (0 there: the namespace's)
WAKEUP_CHANNEL = gen.CHANNELS["wakeup"]
TYPES_CHANNEL = gen.CHANNELS["types"]
NAMESPACES_KEY = gen.GLOBAL_KEYS["namespaces"]
CRON_STATE_KEY = gen.GLOBAL_KEYS["cron_state"]
# Failures kept per task in the errors hash, the newest (ERRORS_KEPT in functions/00-header.lua,
# docs/keyspace.md).
ERRORS_KEPT = 50

FUNCTIONS_DIR = pathlib.Path(__file__).resolve().parents[2] / "functions"
VERSION_FUNCTION = f"{LIBRARY}_version"


class BatonError(redis.exceptions.ResponseError):
    """An error reply of the library: code is the contract code (contract/errors.json), lua_code
    the reply's first word (BATON_INVALID, ...), str() the whole reply."""

    def __init__(self, message):
        super().__init__(message)
        self.lua_code = message.split(" ", 1)[0]
        self.code = gen.ERROR_CODES[self.lua_code]


class VersionMismatch(redis.exceptions.RedisError):
    """The library loaded in Redis is missing or not the version this client speaks."""


class Keys:
    """Every key of one namespace, from the generated patterns (baton:v2:{NS}:...)."""

    def __init__(self, ns):
        self.ns = ns
        self.prefix = gen.KEY_PREFIX.replace("{NS}", "{" + ns + "}")

    def of(self, kind, task_type=None):
        """The key of a key kind (generated KEY_KINDS, or a global key such as cron_state)."""
        if kind in gen.GLOBAL_KEYS:
            return gen.GLOBAL_KEYS[kind]
        spec = gen.KEY_KINDS[kind]
        key = spec["pattern"].replace("{NS}", "{" + self.ns + "}")
        if spec["typed"]:
            if task_type is None:
                raise ValueError(f"key kind {kind} needs a task type")
            key = _fill(key, "TYPE", task_type)
        return key

    def stream(self, task_type):
        return self.of("stream", task_type)

    def scheduled(self, task_type):
        return self.of("scheduled", task_type)

    def leases(self, task_type):
        return self.of("leases", task_type)

    def dead(self, task_type):
        return self.of("dead", task_type)

    def rescue(self, task_type):
        return self.of("rescue", task_type)

    def tasks(self):
        return self.of("tasks")

    def bodies(self):
        return self.of("bodies")

    def errors(self):
        return self.of("errors")

    def events(self):
        return self.of("events")

    def types(self):
        return self.of("types")

    def done(self):
        return self.of("done")

    def ended(self):
        return self.of("ended")

    def config(self):
        return self.of("config")

    def unique(self, key):
        return _fill(self.of("unique"), "KEY", key)


def _fill(pattern, slot, value):
    """The pattern's trailing slot (TYPE, KEY) replaced by value."""
    if not pattern.endswith(":" + slot):
        raise ValueError(f"key pattern {pattern} does not end in :{slot}")
    return pattern[:-len(slot)] + value


def library_source():
    """The library: functions/*.lua concatenated in file-name order."""
    files = sorted(FUNCTIONS_DIR.glob("*.lua"), key=lambda p: p.name.encode())
    return "".join(p.read_text(encoding="utf-8") for p in files)


def load_library(r):
    """FUNCTION LOAD REPLACE of the library (what `baton init` does). Returns the library name."""
    name = r.execute_command("FUNCTION", "LOAD", "REPLACE", library_source())
    return _s(name)


def _s(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    return v


def _raw(v):
    """The bytes of a text _s() decoded (bytes it could not decode come back as they were)."""
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v


def _b(v):
    if isinstance(v, bytes):
        return v
    return str(v).encode("utf-8")


def _check_version(reply):
    version = _s(reply)
    if version != LIBRARY_VERSION:
        raise VersionMismatch(f"functions library version {version} loaded in Redis, this "
                              f"client needs {LIBRARY_VERSION}: run 'baton init'")
    return version


def _not_loaded(error):
    return VersionMismatch(f"functions library version none loaded in Redis, this client needs "
                           f"{LIBRARY_VERSION}: run 'baton init' ({error})")


def _version_on_connect(connection):
    """redis_connect_func of every connection: the usual handshake, then the version check. An
    error here makes redis-py drop the connection and raise it to the caller."""
    connection.on_connect()
    _check_version_after_handshake(connection)


def _check_version_after_handshake(connection):
    """The version check of a connection whose handshake is done (redis-py's RedisCluster runs
    its own handshake, then this)."""
    connection.send_command("FCALL_RO", VERSION_FUNCTION, "0")
    try:
        reply = connection.read_response()
    except redis.exceptions.ResponseError as e:
        raise _not_loaded(e) from None
    _check_version(reply)


def is_cluster(r):
    return isinstance(r, redis.cluster.RedisCluster)


def check_version_on_connect(r):
    """Makes every (re)connect of r's connection pool check the library version, and checks it
    now (connections already open are checked by this call: the version is the server's). On a
    redis.cluster.RedisCluster: every new connection to any node checks, and the check now runs
    on every primary (the library must be loaded on each)."""
    if is_cluster(r):
        r.user_on_connect_func = _check_version_after_handshake
        try:
            replies = r.execute_command("FCALL_RO", VERSION_FUNCTION, 0,
                                        target_nodes=redis.cluster.RedisCluster.PRIMARIES)
        except redis.exceptions.ResponseError as e:
            raise _not_loaded(e) from None
        if not isinstance(replies, dict):
            replies = {"": replies}
        for reply in replies.values():
            _check_version(reply)
        return _check_version(next(iter(replies.values())))
    pool = r.connection_pool
    pool.connection_kwargs["redis_connect_func"] = _version_on_connect
    # Connections the pool already made were built without the hook: give it to them, so that
    # their next reconnect checks too.
    for connection in (list(getattr(pool, "_available_connections", ())) +
                       list(getattr(pool, "_in_use_connections", ()))):
        connection.redis_connect_func = _version_on_connect
    try:
        reply = r.execute_command("FCALL_RO", VERSION_FUNCTION, 0)
    except redis.exceptions.ResponseError as e:
        raise _not_loaded(e) from None
    return _check_version(reply)


def connect(url):
    """A redis.Redis for url (bytes replies) whose connections check the library version."""
    return redis.Redis.from_url(url, redis_connect_func=_version_on_connect)


@dataclasses.dataclass
class TaskSpec:
    """The per-task values of baton_v2_enqueue. payload and extra are JSON object text."""
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

    def values(self):
        """The per-item ARGV values by name."""
        return {"id": self.id, "payload": self.payload, "max_retry": self.max_retry,
                "delay_seconds": self.delay_seconds, "created_at": self.created_at,
                "execution_timeout": "" if self.execution_timeout is None
                else self.execution_timeout,
                "extra": self.extra, "run_at_ms": self.run_at_ms,
                "unique_key": self.unique_key, "unique_ttl_s": self.unique_ttl_s}


@dataclasses.dataclass
class Entry:
    """One task delivered by baton_v2_dequeue."""
    sid: str
    id: str
    payload: bytes
    max_retry: int
    delay_seconds: int
    created_at: int
    execution_timeout: int  # None when absent
    extra: bytes
    attempt: int  # attempts made before this delivery (0 on the first run)


class Delivery(typing.NamedTuple):
    """Reply of baton_v2_dequeue."""
    entries: list
    last_id: str  # "" when something was delivered, else an id to XREAD BLOCK after
    lease_deadline_ms: int  # 0 when nothing was delivered


class Reclaimed(typing.NamedTuple):
    """Reply of baton_v2_reclaim."""
    reclaimed: int
    retried: int
    dead: int
    next_deadline_ms: int  # the earliest lease end left; -1: nothing pending
    now_ms: int


class Lease(typing.NamedTuple):
    """The lease of an active task, read from the consumer group (docs/keyspace.md, "Leases")."""
    consumer: str  # the holder
    lease_ms: int  # the holder's lease length
    deliveries: int  # times the entry was delivered (extend keeps it)
    ends_ms: int  # delivery time + lease_ms (Unix ms, Redis clock)


class RescueFinished(typing.NamedTuple):
    acked_in_group: int
    group_last_id: str
    left_behind: int


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


def parse_stream_entry(sid, fv):
    """(id, attempt, Entry or None) of one work-stream entry read natively (fv: its flat field /
    value list). The task field is ID|MAX_RETRY|DELAY|CREATED|TIMEOUT|ATTEMPT|EXTRA (EXTRA last: it
    may hold '|'). id and attempt are the task field's ID and ATTEMPT parts whenever it splits
    (what baton_v2_start takes), '' when it is missing or does not split; the Entry is None when
    the entry does not split, has no payload or a number is not one."""
    if isinstance(fv, dict):  # redis-py's XREADGROUP reply parser
        fields = {_s(k): v for k, v in fv.items()}
    else:
        fields = {_s(fv[i]): fv[i + 1] for i in range(0, len(fv) - 1, 2)}
    task, payload = fields.get("task"), fields.get("payload")
    parts = _s(task).split("|", 6) if task is not None else []
    if len(parts) != 7:
        return "", "", None
    task_id, max_retry, delay, created, timeout, attempt, extra = parts
    numbers = [max_retry, delay, created, attempt] + ([timeout] if timeout else [])
    if payload is None or not all(n.isdigit() and n.isascii() for n in numbers):
        return task_id, attempt, None
    return task_id, attempt, Entry(
        sid=sid, id=task_id, payload=payload, max_retry=int(max_retry),
        delay_seconds=int(delay), created_at=int(created),
        execution_timeout=int(timeout) if timeout else None,
        extra=extra.encode("utf-8", "surrogateescape"), attempt=int(attempt))


def call_args(keys, name, task_type=None, fixed=None, items=(), extra_keys=()):
    """KEYS and ARGV of one FCALL, from the generated contract: the function's key kinds in order
    (then extra_keys), its ARGV names in order looked up in fixed, then the per-item names looked
    up in each of items."""
    kinds, argv_names, per_item = gen.FUNCTIONS[name]
    call_keys = [keys.of(kind, task_type) for kind in kinds] + list(extra_keys)
    fixed = fixed or {}
    missing = [n for n in argv_names if n not in fixed]
    if missing or set(fixed) - set(argv_names):
        raise TypeError(f"{name}: ARGV {argv_names}, got {sorted(fixed)}")
    args = [_b(fixed[n]) for n in argv_names]
    for item in items:
        args += [_b(item[n]) for n in per_item]
    return call_keys, args


def _translate(e):
    message = str(e)
    if message.split(" ", 1)[0] in gen.ERROR_CODES:
        return BatonError(message)
    return e


class Baton:
    """Thin wrappers over the functions, for one namespace, on one redis.Redis (bytes replies).
    Creating it makes every (re)connect of r check the library version, and checks it now."""

    def __init__(self, r, ns, check_version=True):
        self.r = r
        self.ns = ns
        self.keys = Keys(ns)
        if check_version:
            check_version_on_connect(r)

    def node(self):
        """A redis.Redis on the node that serves this namespace: r itself, or on a cluster the
        primary of the namespace's slot (for what must run on one node, such as MULTI)."""
        if not is_cluster(self.r):
            return self.r
        return self.r.get_redis_connection(self.r.get_node_from_key(self.keys.tasks()))

    def _call(self, name, task_type=None, fixed=None, items=(), extra_keys=()):
        keys, args = call_args(self.keys, name, task_type, fixed, items, extra_keys)
        try:
            return self.r.execute_command("FCALL", name, len(keys), *keys, *args)
        except redis.exceptions.ResponseError as e:
            raise _translate(e) from None

    def version(self):
        return _s(self.r.execute_command("FCALL_RO", VERSION_FUNCTION, 0))

    def configure(self, **settings):
        """Sets the given namespace settings (None = back to the default) and returns every
        setting's effective value as a dict. No argument: read only."""
        items = [{"setting": k, "value": "" if v is None else v} for k, v in settings.items()]
        flat = self._call("baton_v2_configure", items=items)
        return {_s(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}

    def register_namespace(self):
        """SADD baton:v2:namespaces NS (a convenience for tools; the functions do not need it)."""
        self.r.sadd(NAMESPACES_KEY, self.ns)

    def enqueue(self, task_type, specs):
        """Returns [(status, detail)]: ('queued', SID), ('scheduled', due_ms),
        ('duplicate', state), ('unique_conflict', holder_id)."""
        unique = [self.keys.unique(s.unique_key) for s in specs if s.unique_key]
        reply = self._call("baton_v2_enqueue", task_type, {"n": len(specs)},
                           [s.values() for s in specs], unique)
        # A flat array: status, detail for each task in order.
        return [(_s(status), detail if isinstance(detail, int) else _s(detail))
                for status, detail in zip(reply[0::2], reply[1::2])]

    def enqueue_wait(self, task_type, specs, replicas, timeout_ms):
        """enqueue, then WAIT replicas timeout_ms on the same connection (one pipeline on the
        namespace's node), as a producer with "wait for N replicas" does. Returns (results of
        enqueue, replicas that acknowledged). The caller decides what fewer than replicas
        means (the decided contract: unavailable, written on the primary, not known durable)."""
        unique = [self.keys.unique(s.unique_key) for s in specs if s.unique_key]
        keys, args = call_args(self.keys, "baton_v2_enqueue", task_type, {"n": len(specs)},
                               [s.values() for s in specs], unique)
        pipe = self.node().pipeline(transaction=False)
        pipe.execute_command("FCALL", "baton_v2_enqueue", len(keys), *keys, *args)
        pipe.execute_command("WAIT", replicas, timeout_ms)
        reply, acked = pipe.execute(raise_on_error=False)
        if isinstance(reply, redis.exceptions.ResponseError):
            raise _translate(reply)
        results = [(_s(status), detail if isinstance(detail, int) else _s(detail))
                   for status, detail in zip(reply[0::2], reply[1::2])]
        if isinstance(acked, Exception):
            raise acked
        return results, acked

    def dequeue(self, task_type, group, consumer, count, lease_ms=0):
        """Returns a Delivery (entries, last_id, lease_deadline_ms). lease_ms 0: the namespace's
        lease_ms setting."""
        flat, last_id, deadline = self._call(
            "baton_v2_dequeue", task_type,
            {"group": group, "consumer": consumer, "count": count, "lease_ms": lease_ms})
        entries = []
        for i in range(0, len(flat), 9):
            v = flat[i:i + 9]
            timeout = _s(v[6])
            entries.append(Entry(sid=_s(v[0]), id=_s(v[1]), payload=v[2], max_retry=int(v[3]),
                                 delay_seconds=int(v[4]), created_at=int(v[5]),
                                 execution_timeout=int(timeout) if timeout else None,
                                 extra=v[7], attempt=int(v[8])))
        return Delivery(entries, _s(last_id), deadline)

    def read(self, task_type, group, consumer, count, block_ms=None):
        """The fast read path's own read: XREADGROUP GROUP group consumer COUNT count [BLOCK ms]
        STREAMS stream > (the group is created at 0 when missing, as baton_v2_dequeue does).
        Returns [(sid, id, attempt, entry)]: id and attempt are what baton_v2_start takes ('' when
        the task field does not split); entry is an Entry, or None when the entry is malformed."""
        stream = self.keys.stream(task_type)
        block = [] if block_ms is None else ["BLOCK", block_ms]
        cmd = ["XREADGROUP", "GROUP", group, consumer, "COUNT", count, *block,
               "STREAMS", stream, ">"]
        try:
            reply = self.r.execute_command(*cmd)
        except redis.exceptions.ResponseError as e:
            if "NOGROUP" not in str(e):
                raise
            try:
                self.r.execute_command("XGROUP", "CREATE", stream, group, "0", "MKSTREAM")
            except redis.exceptions.ResponseError as created:
                if "BUSYGROUP" not in str(created):
                    raise
            reply = self.r.execute_command(*cmd)
        out = []
        for _, entries in reply or []:
            for sid, fv in entries:
                out.append((_s(sid),) + parse_stream_entry(_s(sid), fv or []))
        return out

    def start(self, task_type, group, consumer, reads, lease_ms=0):
        """baton_v2_start of what read() returned. Returns the SIDs that must not run."""
        reply = self._call("baton_v2_start", task_type,
                           {"group": group, "consumer": consumer, "lease_ms": lease_ms,
                            "n": len(reads)},
                           [{"sid": r[0], "id": _raw(r[1]), "attempt": _raw(r[2])}
                            for r in reads])
        return [_s(s) for s in reply]

    def fast_dequeue(self, task_type, group, consumer, count, lease_ms=0, block_ms=None):
        """read() then start(): the entries that may run, as a list of Entry."""
        reads = self.read(task_type, group, consumer, count, block_ms)
        if not reads:
            return []
        refused = set(self.start(task_type, group, consumer, reads, lease_ms))
        return [r[3] for r in reads if r[3] is not None and r[0] not in refused]

    def ack(self, task_type, group, consumer, tasks):
        """tasks: [(id, SID)]. Returns ['done' | 'stale_done' | 'gone']."""
        reply = self._call("baton_v2_ack", task_type,
                           {"group": group, "consumer": consumer, "n": len(tasks)},
                           [{"id": i, "sid": s} for i, s in tasks])
        return [_s(s) for s in reply]

    def fail(self, task_type, group, consumer, task_id, sid, kind, error, stack="",
             base_ms=DEFAULT_BASE_MS, max_ms=DEFAULT_MAX_MS, jitter=0.0):
        """Returns (outcome, due_or_at_ms, attempt): outcome 'retry', 'dead' or 'stale'."""
        outcome, at, attempt = self._call(
            "baton_v2_fail", task_type,
            {"group": group, "consumer": consumer, "id": task_id, "sid": sid, "kind": kind,
             "error": error, "stack": stack, "base_ms": base_ms, "max_ms": max_ms,
             "jitter": repr(float(jitter))})
        return _s(outcome), (at if isinstance(at, int) else _s(at)), attempt

    def reclaim(self, task_type, count, base_ms=DEFAULT_BASE_MS, max_ms=DEFAULT_MAX_MS, seed=0,
                reaper="reaper"):
        """Takes back tasks whose lease deadline passed. Returns a Reclaimed."""
        return Reclaimed(*self._call(
            "baton_v2_reclaim", task_type,
            {"count": count, "base_ms": base_ms, "max_ms": max_ms, "jitter_seed": seed,
             "reaper": reaper}))

    def extend(self, task_type, group, consumer, tasks, lease_ms=0):
        """tasks: [(id, SID)]. Renews their leases (they end lease_ms from now; lease_ms becomes
        the consumer's lease length, 0: the namespace's lease_ms); returns the SIDs still
        held."""
        reply = self._call("baton_v2_extend", task_type,
                           {"group": group, "consumer": consumer, "lease_ms": lease_ms},
                           [{"id": i, "sid": s} for i, s in tasks])
        return [_s(s) for s in reply]

    def promote(self, task_type, limit=100):
        """Returns (promoted, next_due_ms or -1, now_ms)."""
        return tuple(self._call("baton_v2_promote", task_type, {"limit": limit}))

    def cancel(self, task_type, task_id):
        return _s(self._call("baton_v2_cancel", task_type, {"id": task_id}))

    def dlq_replay(self, task_type, task_id, payload=b""):
        """Returns the new SID. payload b"": keep the old one."""
        return _s(self._call("baton_v2_dlq_replay", task_type,
                             {"id": task_id, "payload": payload}))

    def dlq_delete(self, task_type, task_id):
        return _s(self._call("baton_v2_dlq_delete", task_type, {"id": task_id}))

    def rescue_start(self, task_type, group, rescue_group):
        """Returns the handover id."""
        return _s(self._call("baton_v2_rescue_start", task_type,
                             {"group": group, "rescue_group": rescue_group}))

    def rescue_finish(self, task_type, force=False, limit=100000):
        acked, last_id, left = self._call("baton_v2_rescue_finish", task_type,
                                          {"force": 1 if force else 0, "limit": limit})
        return RescueFinished(acked, _s(last_id), left)

    def cron_mark(self, job, tick_s):
        """1 when the job's last handled tick moved to tick_s, 0 when it was already there."""
        return self._call("baton_v2_cron_mark", fixed={"job": job, "tick": tick_s})

    # Reading state (no function needed)

    def record(self, task_id):
        """(state, type, attempt, sid) of a live task, or None."""
        rec = self.r.hget(self.keys.tasks(), task_id)
        if rec is None:
            return None
        state, task_type, attempt, sid = _s(rec).split("|", 3)
        return state, task_type, int(attempt), sid

    def final_state(self, task_id):
        """(state, finished_ms) of a finished task within the retention, or None. State is the
        ended record's (cancelled, deleted, dropped), else done."""
        finished = self.r.zscore(self.keys.done(), task_id)
        if finished is None:
            return None
        ended = self.r.hget(self.keys.ended(), task_id)
        state = "done" if ended is None else _s(ended).split("|", 1)[0]
        return state, int(finished)

    def ended(self, task_id):
        """(state, type, attempts, worker) of a cancelled / deleted / dropped task, or None."""
        v = self.r.hget(self.keys.ended(), task_id)
        if v is None:
            return None
        state, task_type, attempts, worker = _s(v).split("|", 3)
        return state, task_type, int(attempts), worker

    def lease(self, task_type, group, sid):
        """The Lease of the entry SID pending in group, or None when it is not pending. It ends
        at its delivery time (now - idle, from XPENDING) + its consumer's lease length
        (HGET leases:TYPE consumer when an integer in LEASE_MS_RANGE, else the namespace's
        lease_ms). TIME and XPENDING run in one MULTI; the idle time is read a moment after the
        clock, so the end can come out a little early (a millisecond as a rule), never late."""
        pipe = self.node().pipeline(transaction=True)
        pipe.time()
        pipe.xpending_range(self.keys.stream(task_type), group, sid, sid, 1)
        (sec, usec), pending = pipe.execute(raise_on_error=False)
        if isinstance(pending, redis.exceptions.ResponseError):
            if str(pending).startswith("NOGROUP"):
                return None  # no such group (or stream): nothing is pending in it
            raise pending
        if not pending:
            return None
        p = pending[0]
        consumer, idle_ms = _s(p["consumer"]), p["time_since_delivered"]
        stored = _s(self.r.hget(self.keys.leases(task_type), consumer) or b"")
        lo, hi = LEASE_MS_RANGE
        if re.fullmatch(r"[0-9]{1,15}", stored) and lo <= int(stored) <= hi:
            lease_ms = int(stored)
        else:
            lease_ms = self.configure()["lease_ms"]
        now_ms = sec * 1000 + usec // 1000
        return Lease(consumer, lease_ms, p["times_delivered"], now_ms - idle_ms + lease_ms)

    def body(self, task_id):
        """The body of a task that is not in a stream, as a dict of str, or None."""
        v = self.r.hget(self.keys.bodies(), task_id)
        return None if v is None else json.loads(v)

    def error_history(self, task_id):
        """The failed attempts recorded for a task, oldest first, as dicts ([] when it has none).

        The errors hash has one field per failure (docs/keyspace.md): ID holds N, the sequence
        number of the newest recorded failure, and ID|K the JSON object of failure K; only the
        newest ERRORS_KEPT are kept. So: HGET errors ID -> N, then HMGET errors
        ID|max(1, N-ERRORS_KEPT+1) .. ID|N (docs/protocol.md, "Reading state")."""
        key = self.keys.errors()
        n = self.r.hget(key, task_id)
        if n is None:
            return []
        n = int(n)
        fields = [f"{task_id}|{k}" for k in range(max(1, n - ERRORS_KEPT + 1), n + 1)]
        if not fields:
            return []
        return [json.loads(v) for v in self.r.hmget(key, fields) if v is not None]

    def events(self, task_id=None):
        """Events entries as dicts of str (with 'event_id'; 'ids' and 'attempts' are split into
        lists), oldest first; with task_id, only the entries that name that task."""
        out = []
        for eid, fields in self.r.xrange(self.keys.events()):
            e = {_s(f): _s(v) for f, v in fields.items()}
            e["event_id"] = _s(eid)
            e["ids"] = e["ids"].split(" ") if e.get("ids") else []
            e["attempts"] = e["attempts"].split(" ") if e.get("attempts") else []
            if task_id is None or task_id in e["ids"]:
                out.append(e)
        return out
