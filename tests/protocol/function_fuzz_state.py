"""The dataset the Lua input fuzzer (test_function_fuzz.py) calls every function against.

build_state() puts a realistic state in Redis through the library itself: in namespace fz, tasks
queued, leased (live and expired leases), scheduled (due and not yet due), retrying, dead, done,
cancelled, a held unique key, an error history, a foreign (malformed) stream entry and a rescue in
progress; a second namespace 'other' with a little of the same, and a cron job's state. It is kept
in database 1 (the pristine copy) and restore() copies it back over database 0 (COPY keeps the
consumer groups, their pending entries with their delivery times, and the expiry times), so every
fuzz call starts from the same state however the previous one changed it.

fingerprint() is what "wrote nothing" means: per key, DEBUG DIGEST-VALUE, the absolute expiry and,
for a stream, its DUMP (DEBUG DIGEST leaves out consumer groups and their pending entries).
"""

import baton_protocol as bp

NS = "fz"
OTHER_NS = "other"
TYPE = "email"
RESCUE_TYPE = "sms"  # a rescue of its group 'workers' is in progress
GROUP = "workers"
RESCUE_GROUP = "rescuers"
CREATED = 1722489600
LIVE_LEASE_MS = 86400000  # live leases outlast any fuzz run
EXPIRED_IDLE_MS = 600000  # expired leases: delivered this long ago, with a 1000 ms lease
CRON_JOB = "nightly"
PRISTINE_DB = 1


class State:
    """What build_state() made: the ids and SIDs the valid-call builders draw from."""

    def __init__(self):
        self.queued = []  # (id, sid, attempt) undelivered stream entries
        self.active = []  # (id, sid, attempt, consumer) live leases
        self.expired = []  # (id, sid, attempt, consumer) leases that ran out
        self.scheduled = []  # ids delayed (not due)
        self.due = []  # ids in the scheduled set, due now (retry with no backoff)
        self.retrying = []  # ids waiting for a retry (not due)
        self.dead = []  # ids in the dead-letter queue
        self.finished = []  # ids done / cancelled within the retention
        self.malformed_sid = None  # a foreign stream entry nobody enqueued
        self.unique_key = "order-1"  # held by task 'u1'
        self.other_ids = []  # ids of namespace 'other'
        self.consumers = []


def _spec(task_id, **kw):
    kw.setdefault("payload", b'{"to":"a@example.com","n":1}')
    kw.setdefault("created_at", CREATED)
    return bp.TaskSpec(id=task_id, **kw)


def _expire_lease(r, b, task_type, sid, consumer):
    """Makes the lease of a pending entry run out: its delivery time moves EXPIRED_IDLE_MS back
    (XCLAIM to the same holder; JUSTID keeps the delivery count)."""
    r.xclaim(b.keys.stream(task_type), GROUP, consumer, 0, [sid], idle=EXPIRED_IDLE_MS,
             justid=True)


def build_state(r):
    """Fills database 0 through the library; returns a State. Database 0 must be empty."""
    st = State()
    b = bp.Baton(r, NS, check_version=False)
    b.configure(events_maxlen=10000, dlq_max=1000)
    now_ms = b.promote(TYPE)[2]

    out = b.enqueue(TYPE, [
        _spec("a1"), _spec("a2"), _spec("a3", max_retry=1), _spec("a4"), _spec("a5"),
        _spec("u1", unique_key=st.unique_key, unique_ttl_s=86400, execution_timeout=60,
              extra=b'{"trace":"abc"}'),
        _spec("r1", max_retry=3), _spec("r2", max_retry=3), _spec("r3", max_retry=3),
        _spec("d1", max_retry=0), _spec("d2", max_retry=5), _spec("k1"), _spec("c1"),
        _spec("s1", delay_seconds=3600), _spec("s2", run_at_ms=now_ms + 7200000)])
    assert [s for s, _ in out] == ["queued"] * 13 + ["scheduled"] * 2, out
    st.scheduled = ["s1", "s2"]

    # Leases: live (a1, a2, and u1 below), run out (a3, a4), read on the fast path and not
    # started yet (a5).
    for e in b.dequeue(TYPE, GROUP, "w-live", 2, lease_ms=LIVE_LEASE_MS).entries:
        st.active.append((e.id, e.sid, e.attempt, "w-live"))
    for e in b.dequeue(TYPE, GROUP, "w-gone", 2, lease_ms=1000).entries:
        _expire_lease(r, b, TYPE, e.sid, "w-gone")
        st.expired.append((e.id, e.sid, e.attempt, "w-gone"))
    (sid, task_id, attempt, _), = b.read(TYPE, GROUP, "w-fast", 1)
    st.active.append((task_id, sid, int(attempt), "w-fast"))
    # w-fast's lease length, as its earlier baton_v2_start calls left it (a live lease: the
    # state must not change with the time a fuzz run takes).
    r.hset(b.keys.leases(TYPE), "w-fast", LIVE_LEASE_MS)
    got = {e.id: e for e in b.dequeue(TYPE, GROUP, "w-work", 100, LIVE_LEASE_MS).entries}
    assert sorted(got) == ["c1", "d1", "d2", "k1", "r1", "r2", "r3", "u1"], got
    st.active.append(("u1", got["u1"].sid, 0, "w-work"))

    def fail(task_id, kind="error", error="boom", base_ms=3600000, stack=""):
        return b.fail(TYPE, GROUP, "w-work", task_id, got[task_id].sid, kind, error,
                      stack=stack, base_ms=base_ms, max_ms=base_ms)

    # r3 back in the stream at attempt 1; r1 retry due now; r2 retry in an hour.
    fail("r3", base_ms=0)
    b.promote(TYPE)
    fail("r1", base_ms=0)
    fail("r2", kind="timeout", error="slow", stack="at x\nat y")
    st.due, st.retrying = ["r1"], ["r2"]
    assert fail("d1", error='bad "input"\n')[0] == "dead"
    assert fail("d2", kind="non_retryable")[0] == "dead"
    st.dead = ["d1", "d2"]
    assert b.ack(TYPE, GROUP, "w-work", [("k1", got["k1"].sid)]) == ["done"]
    fail("c1")
    assert b.cancel(TYPE, "c1") == "cancelled"
    st.finished = ["k1", "c1"]
    st.consumers = ["w-live", "w-gone", "w-fast", "w-work"]

    # Undelivered: q1..q3, a foreign writer's entry nobody enqueued (dequeue dead-letters it),
    # then q4.
    b.enqueue(TYPE, [_spec("q1"), _spec("q2", max_retry=25), _spec("q3")])
    st.malformed_sid = r.xadd(b.keys.stream(TYPE), {"task": "x|y", "junk": "1"}).decode()
    b.enqueue(TYPE, [_spec("q4")])
    for sid, fields in r.xrange(b.keys.stream(TYPE)):
        parts = fields[b"task"].decode().split("|")
        if parts[0] in ("q1", "q2", "q3", "q4", "r3"):
            st.queued.append((parts[0], sid.decode(), int(parts[5])))
    assert len(st.queued) == 5, st.queued

    # A rescue in progress on another type, and a cron job's state.
    b.enqueue(RESCUE_TYPE, [_spec(f"m{i}") for i in range(1, 4)])
    b.dequeue(RESCUE_TYPE, GROUP, "w-sms", 1, lease_ms=LIVE_LEASE_MS)
    b.rescue_start(RESCUE_TYPE, GROUP, RESCUE_GROUP)
    b.cron_mark(CRON_JOB, 1722489600)

    # The other namespace: one dead, one active, one queued.
    o = bp.Baton(r, OTHER_NS, check_version=False)
    o.enqueue(TYPE, [_spec("o1", max_retry=0), _spec("o2"), _spec("o3")])
    e = o.dequeue(TYPE, GROUP, "w-o", 1, lease_ms=LIVE_LEASE_MS).entries[0]
    o.fail(TYPE, GROUP, "w-o", e.id, e.sid, "error", "x")
    o.dequeue(TYPE, GROUP, "w-o", 1, lease_ms=LIVE_LEASE_MS)
    st.other_ids = ["o1", "o2", "o3"]
    return st


def save_pristine(r):
    """Copies database 0 into PRISTINE_DB (emptied first)."""
    r.execute_command("SELECT", PRISTINE_DB)
    try:
        r.flushdb()
    finally:
        r.execute_command("SELECT", 0)
    pipe = r.pipeline(transaction=False)
    for key in r.keys("*"):
        pipe.execute_command("COPY", key, key, "DB", PRISTINE_DB)
    assert all(pipe.execute()), "COPY to the pristine database failed"


def restore(r, pristine_keys):
    """Database 0 becomes the pristine copy again: one MULTI of FLUSHDB, then a COPY of every
    key from PRISTINE_DB."""
    pipe = r.pipeline(transaction=True)
    pipe.flushdb()
    pipe.execute_command("SELECT", PRISTINE_DB)
    for key in pristine_keys:
        pipe.execute_command("COPY", key, key, "DB", 0)
    pipe.execute_command("SELECT", 0)
    replies = pipe.execute()
    assert all(replies[2:-1]), "COPY from the pristine database failed"


def fingerprint(r):
    """key -> (DEBUG DIGEST-VALUE, PEXPIRETIME, DUMP of a stream or None) for every key. A
    stream's DUMP holds its consumer groups, consumers and pending entries (delivery times and
    counts), which DEBUG DIGEST leaves out; the DUMP of other types may change with the layout of
    a hash table alone, so only their content digest counts."""
    keys = sorted(r.keys("*"))
    if not keys:
        return {}
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("DEBUG", "DIGEST-VALUE", *keys)
    for key in keys:
        pipe.execute_command("PEXPIRETIME", key)
        pipe.type(key)
        pipe.dump(key)
    replies = pipe.execute()
    out = {}
    for i, key in enumerate(keys):
        expiry, kind, dump = replies[1 + 3 * i:4 + 3 * i]
        out[key] = (replies[0][i], expiry, dump if kind == b"stream" else None)
    return out


def changed_keys(before, after):
    """The keys added, removed or changed between two fingerprints."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
