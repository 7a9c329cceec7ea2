"""Hypothesis strategies of FCALLs for the Lua input fuzzer (test_function_fuzz.py).

calls(name, state) draws one call of function `name`:
- mostly a well-formed call built with baton_protocol.call_args from the ids, SIDs and consumers
  of the fuzz state (function_fuzz_state.py), then 0 to 3 mutations, each corrupting one thing:
  an ARGV value replaced by a hostile value or bent a little ('01', ' 1', '1.0', a NUL, a bad UTF-8
  byte...), an ARGV value dropped or added, a key replaced by a key of another namespace, type or
  kind, or by a key with a broken hash tag, a key dropped, added or swapped. A valid call with
  one corrupted field gets past the first checks and reaches the deep code paths;
- sometimes a call of random keys and random hostile ARGV.
"""

import functools
import json
import pathlib
import typing

from hypothesis import strategies as st

import baton_generated as gen
import baton_protocol as bp
import function_fuzz_state as fs

FUNCTIONS = list(gen.FUNCTIONS)
SETTINGS = list(gen.NAMESPACE_DEFAULTS)
CONFIG_RANGES = {name: (c["min"], c["max"]) for name, c in json.loads(
    (pathlib.Path(__file__).resolve().parents[2] / "contract" / "protocol.json").read_text())[
        "namespace_config"].items()}
FAIL_KINDS = ["error", "timeout", "non_retryable", "malformed"]
TYPES = [fs.TYPE, fs.RESCUE_TYPE]
GROUPS = [fs.GROUP, fs.RESCUE_GROUP, "g2"]


class Call(typing.NamedTuple):
    name: str
    keys: list  # bytes
    argv: list  # bytes
    ro: bool = False  # FCALL_RO (only baton_v2_version is read-only)

    def __repr__(self):
        return (f"Call({self.name!r}, keys={[_Short(k) for k in self.keys]}, "
                f"argv={[_Short(a) for a in self.argv]}{', ro=True' if self.ro else ''})")


class _Short:
    """A value shown in full when short, else its length and both ends."""

    def __init__(self, v):
        self.v = v

    def __repr__(self):
        if len(self.v) <= 200:
            return repr(self.v)
        return f"<{len(self.v)} bytes {self.v[:40]!r}...{self.v[-20:]!r}>"


def _b(v):
    return v if isinstance(v, bytes) else str(v).encode()


# Values every parser should refuse (or take) cleanly.
NUMBERS = ["", "0", "-0", "-1", "1", "00", "01", "007", "0010", "+1", " 1", "1 ", "1.5", "1.0",
           "1e3", "1e308", "-1e308", "1e309", "1E2", "0x10", "0X1p4", "NaN", "nan", "-nan", "inf",
           "-inf", "Infinity", str(2 ** 31), str(2 ** 53 + 1), str(2 ** 63 - 1), str(2 ** 63),
           str(-2 ** 63), str(2 ** 64), "9" * 15, "9" * 16, "1" + "0" * 15, "0" * 40 + "1",
           "1000", "999", "1001", "86400000", "86400001", "25", "26", "946684799", "4102444801",
           "0.5", "0.99999999999999999", "1e-400", "-0.0"]
STREAM_IDS = ["0-0", "0-1", "1-0", "1-1", "-1-0", "1-", "-", "+", "*", "$", ">", "(1-0",
              "18446744073709551615-18446744073709551615", "18446744073709551616-0",
              "1-18446744073709551616", "99999999999999999999999-0", "0" * 30 + "1-0",
              "1796424026728", "1796424026728-0-0", "1796424026728-x"]
TEXTS = ["", " ", "\t", "\n", "a", "é", "\u2603", "\U0001F600", "|", "a|b", "||||||", "%s", "%d",
         "..", "-a", "_a", "a" * 64, "a" * 65, "a" * 128, "a" * 129, "malformed-1-0", "email",
         "sms", "fz", "other", "{fz}", "}", "{", ":", "baton:cron:state", "error", "timeout",
         "non_retryable", "malformed", "lease_expired", "events_maxlen", "lease_ms", "__index",
         "lease_ms ", "LEASE_MS", "nightly", "order-1", "workers", "rescuers", "w-live", "w-gone"]
JSONS = ["{}", "{ }", " {} ", "\n{}\n", '{"a":1}', '{"a":"\\u0000"}', "{", "}", "}{", "[]",
         "[1,2]", '"x"', "1", "null", "true", '{"a":1', '{"a":"b"}x', "{\x00}", "{\xff}",
         '{"a":' * 5000 + "1" + "}" * 5000, "[" * 10000 + "]" * 10000,
         '{"k":"' + "x" * 524280 + '"}', '{"k":"' + "x" * 524270 + '"}']
BINARY = [b"\x00", b"a\x00b", b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
          b"\x80abc", b"{\xff\xfe}", b"x" * 100000]
HOSTILE = [_b(v) for v in NUMBERS + STREAM_IDS + TEXTS + JSONS] + BINARY
# The likeliest trouble makers, drawn more often than the long list.
SPECIAL = [_b(v) for v in ["", "01", "nan", "-nan", "inf", "-1", "1.5", " 1", "0x10", str(2 ** 63),
                           str(2 ** 64), "1e308", "18446744073709551616-0", "{}", "[]"]] + \
    [b"\x00", b"\xff"]


def _hostile_values():
    listed = st.sampled_from(HOSTILE)
    return st.one_of(
        st.sampled_from(SPECIAL), listed, listed,
        st.integers(min_value=-2 ** 70, max_value=2 ** 70).map(_b),
        st.floats(allow_nan=True, allow_infinity=True).map(lambda f: _b(repr(f))),
        st.binary(max_size=40),
        st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


_HOSTILE_VALUES = _hostile_values()


def hostile_values():
    return _HOSTILE_VALUES


def _bend(v, how):
    """A near miss of a valid value."""
    return [b"0" + v, b" " + v, v + b" ", v + b".0", b"-" + v, b"+" + v, v + v, v[:-1], v[1:],
            v.upper(), v + b"\x00", b"\xff" + v, v + b"|", b"", v * 100, b"9" * 20 + v,
            v + b"0" * 20][how]


BENDS = 17

# Keys -------------------------------------------------------------------------------------------


def _key(ns, kind, task_type):
    return _b(bp.Keys(ns).of(kind, task_type if gen.KEY_KINDS.get(kind, {}).get("typed") else None))


@functools.lru_cache(maxsize=None)
def _broken_key_strategy(key):
    return st.sampled_from(_broken_keys(key))


def _broken_keys(key):
    """Near misses of a correct key: the hash tag, the prefix, the NS and the TYPE bent."""
    k = key.decode("utf-8", "surrogateescape")
    start, end = k.find("{"), k.find("}")
    ns = k[start + 1:end] if 0 <= start < end else "fz"
    tag = "{" + ns + "}"
    last = k.rsplit(":", 1)[-1]  # the TYPE of a typed key, else the kind
    out = [k.replace("{", "").replace("}", ""), k.replace(tag, tag + "{x}"),
           k.replace(tag, "{" + tag + "}"), k.replace(tag, "{" + ns + " }"),
           k.replace(tag, tag.upper()), k.replace(tag, "{}"), k.replace(tag, "{f z}"),
           k.replace(tag, "{-" + ns + "}"), k.replace(tag, "{" + "f" * 65 + "}"),
           k.replace("baton:v2:", "baton:v1:"), k.replace("baton:v2:", "baton:v3:"), k + ":",
           k + ":x", ":" + k, k.upper(), k[:-1], k[:-len(last)] + last + ":x",
           k[:-len(last)] + last[:1] + "|" + last[1:], k[:-len(last)], k[:-len(last)] + "e" * 65,
           " " + k, ""]
    return [x.encode("utf-8", "surrogateescape") for x in out]


def key_pool(ns, task_type):
    kinds = list(gen.KEY_KINDS)
    pool = []
    for n in (fs.NS, fs.OTHER_NS, "nope"):
        for t in TYPES + ["push"]:
            pool += [_key(n, kind, t) for kind in kinds if kind != "unique"]
    pool += [_b(bp.Keys(ns).unique(fs.State().unique_key)), _b(bp.Keys(ns).unique("other")),
             _b(gen.GLOBAL_KEYS["cron_state"]), _b(gen.GLOBAL_KEYS["namespaces"]),
             _b(gen.GLOBAL_KEYS["cron_jobs"]), b"baton:cron:state:x"]
    pool += _broken_keys(_key(ns, "tasks", task_type)) + _broken_keys(_key(ns, "stream", task_type))
    return sorted(set(pool))


# Well-formed calls --------------------------------------------------------------------------------


def _ints(lo, hi):
    return st.integers(min_value=lo, max_value=hi)


@st.composite
def _where(draw, types=(fs.TYPE,)):
    """(namespace, task type) of a call: mostly fz and its main type."""
    ns = draw(st.sampled_from([fs.NS] * 6 + [fs.OTHER_NS]))
    return ns, draw(st.sampled_from(list(types) * 4 + TYPES))


def _lease():
    return st.one_of(st.just(0), _ints(1000, 86400000))


def _valid(name, ns, task_type, fixed=None, items=(), extra_keys=()):
    keys, argv = bp.call_args(bp.Keys(ns), name, task_type, fixed, items,
                              [_b(k) for k in extra_keys])
    return [_b(k) for k in keys], list(argv)


def valid_call(name, state):
    """A strategy of well-formed (keys, argv) of function `name` on the fuzz state."""
    entries = [(i, s, a) for i, s, a in state.queued] + \
              [(i, s, a) for i, s, a, _ in state.active + state.expired] + \
              [("x", state.malformed_sid, "y")]
    holders = state.active + state.expired
    ids = sorted({e[0] for e in entries} | set(state.scheduled + state.due + state.retrying +
                 state.dead + state.finished + state.other_ids) | {"n1", "n2", "nope"})
    consumers = state.consumers + ["w-new", "w-o", "w-sms"]
    some_id = st.sampled_from(ids)
    group = st.sampled_from([fs.GROUP] * 4 + GROUPS)
    consumer = st.sampled_from(consumers)
    json_object = st.sampled_from(["{}", '{"to":"b@example.com"}', ' {"a":[1,{"b":null}]} '])

    @st.composite
    def build(draw):
        if name == "baton_v2_version":
            return [], []
        if name == "baton_v2_cron_mark":
            job = draw(st.sampled_from([fs.CRON_JOB, "hourly", "é|x"]))
            return _valid(name, fs.NS, None,
                          {"job": job, "tick": draw(_ints(0, 2 ** 40))})
        if name == "baton_v2_configure":
            ns, _ = draw(_where())
            items = draw(st.lists(st.sampled_from(SETTINGS).flatmap(
                lambda s: st.one_of(st.just(""), _ints(*CONFIG_RANGES[s])).map(
                    lambda v: {"setting": s, "value": v})), max_size=6))
            return _valid(name, ns, None, items=items)
        if name in ("baton_v2_rescue_start", "baton_v2_rescue_finish"):
            ns, task_type = draw(_where(types=(fs.RESCUE_TYPE, fs.TYPE)))
            if name == "baton_v2_rescue_start":
                fixed = {"group": draw(group), "rescue_group": draw(st.sampled_from(
                    [fs.RESCUE_GROUP, "r2", fs.GROUP]))}
            else:
                fixed = {"force": draw(st.sampled_from([0, 1])),
                         "limit": draw(_ints(1, 1000000))}
            return _valid(name, ns, task_type, fixed)
        ns, task_type = draw(_where())
        # Now and then a call with hundreds of items: past CHUNK (512 arguments per variadic
        # command) and TASKS_LISTPACK_MAX (64 records) of functions/00-header.lua.
        bulk = draw(st.sampled_from([0] * 19 + [70, 600]))
        if name == "baton_v2_enqueue":
            specs = draw(st.lists(st.builds(
                dict, id=st.one_of(some_id, st.sampled_from(["n1", "n2", "n3"])),
                payload=json_object, max_retry=_ints(0, 25),
                delay_seconds=st.one_of(st.just(0), _ints(1, 31536000)),
                created_at=_ints(946684800, 4102444800),
                execution_timeout=st.one_of(st.just(""), _ints(1, 86400)),
                extra=st.one_of(st.just(""), json_object),
                run_at_ms=st.one_of(st.just(0), _ints(1, 2 ** 45)),
                unique_key=st.sampled_from(["", "", "", state.unique_key, "order-2"]),
                unique_ttl_s=_ints(1, 86400)), min_size=0, max_size=5))
            if bulk and specs:
                specs += [dict(specs[0], id=f"bulk{i}", unique_key="") for i in range(bulk)]
            unique = [bp.Keys(ns).unique(s["unique_key"]) for s in specs if s["unique_key"]]
            return _valid(name, ns, task_type, {"n": len(specs)}, specs, unique)
        if name == "baton_v2_dequeue":
            return _valid(name, ns, task_type, {
                "group": draw(group), "consumer": draw(consumer), "count": draw(_ints(1, 1000)),
                "lease_ms": draw(_lease())})
        if name == "baton_v2_start":
            reads = draw(st.lists(st.sampled_from(entries), max_size=4))
            reads = (reads * bulk)[:bulk] if bulk and reads else reads
            return _valid(name, ns, task_type, {
                "group": draw(group), "consumer": draw(consumer), "lease_ms": draw(_lease()),
                "n": len(reads)}, [{"sid": s, "id": i, "attempt": a} for i, s, a in reads])
        if name in ("baton_v2_ack", "baton_v2_extend"):
            pairs = draw(st.lists(st.sampled_from(entries), max_size=4))
            pairs = (pairs * bulk)[:bulk] if bulk and pairs else pairs
            holder = draw(st.sampled_from(holders))
            fixed = {"group": draw(group), "consumer": draw(st.sampled_from(
                [holder[3]] * 8 + consumers))}
            fixed["n" if name == "baton_v2_ack" else "lease_ms"] = (
                len(pairs) if name == "baton_v2_ack" else draw(_lease()))
            return _valid(name, ns, task_type, fixed,
                          [{"id": i, "sid": s} for i, s, _ in pairs])
        if name == "baton_v2_fail":
            task_id, sid, _, holder = draw(st.sampled_from(holders))
            return _valid(name, ns, task_type, {
                "group": draw(group), "consumer": draw(st.sampled_from([holder] * 8 + consumers)),
                "id": task_id, "sid": sid, "kind": draw(st.sampled_from(FAIL_KINDS)),
                "error": draw(st.text(max_size=30)).encode("utf-8", "surrogatepass"),
                "stack": draw(st.sampled_from(["", "at x\nat y"])),
                "base_ms": draw(_ints(0, 10 ** 7)), "max_ms": draw(_ints(0, 10 ** 8)),
                "jitter": repr(draw(st.floats(min_value=0, max_value=1, exclude_max=True)))})
        if name == "baton_v2_reclaim":
            return _valid(name, ns, task_type, {
                "count": draw(_ints(1, 1000)), "base_ms": draw(_ints(0, 10 ** 7)),
                "max_ms": draw(_ints(0, 10 ** 8)), "jitter_seed": draw(_ints(0, 2 ** 40)),
                "reaper": draw(st.sampled_from(["reaper", "batond-1"]))})
        if name == "baton_v2_promote":
            return _valid(name, ns, task_type, {"limit": draw(_ints(1, 10000))})
        if name in ("baton_v2_cancel", "baton_v2_dlq_delete"):
            return _valid(name, ns, task_type, {"id": draw(some_id)})
        if name == "baton_v2_dlq_replay":
            return _valid(name, ns, task_type, {
                "id": draw(st.sampled_from(state.dead + ids)),
                "payload": draw(st.one_of(st.just(""), json_object))})
        raise AssertionError(f"no valid-call builder for {name}")

    return build()


# Mutations --------------------------------------------------------------------------------------


_MUTATIONS = st.sampled_from(["argv_hostile", "argv_hostile", "argv_bend", "argv_bend",
                              "argv_drop", "argv_add", "key_replace", "key_broken", "key_drop",
                              "key_add", "key_swap", "argv_truncate"])


@st.composite
def _mutate(draw, keys, argv, pool):
    """Applies one corruption to (keys, argv), in place. pool: a strategy of other keys."""
    op = draw(_MUTATIONS)
    pos = draw(_ints(0, 10 ** 6))
    if op.startswith("argv") and op != "argv_add" and not argv:
        op = "argv_add"
    if op.startswith("key") and op != "key_add" and not keys:
        op = "key_add"
    if op == "argv_hostile":
        argv[pos % len(argv)] = draw(hostile_values())
    elif op == "argv_bend":
        i = pos % len(argv)
        argv[i] = _bend(argv[i], draw(_ints(0, BENDS - 1)))
    elif op == "argv_drop":
        del argv[pos % len(argv)]
    elif op == "argv_add":
        argv.insert(pos % (len(argv) + 1), draw(hostile_values()))
    elif op == "argv_truncate":
        del argv[pos % len(argv):]
    elif op == "key_replace":
        keys[pos % len(keys)] = draw(pool)
    elif op == "key_broken":
        i = pos % len(keys)
        keys[i] = draw(_broken_key_strategy(keys[i]))
    elif op == "key_drop":
        del keys[pos % len(keys)]
    elif op == "key_add":
        keys.insert(pos % (len(keys) + 1), draw(st.one_of(pool, hostile_values())))
    elif op == "key_swap":
        i, j = pos % len(keys), draw(_ints(0, 10 ** 6)) % len(keys)
        keys[i], keys[j] = keys[j], keys[i]


def calls(name, state):
    """A strategy of Call for function `name`."""
    pool = st.sampled_from(key_pool(fs.NS, fs.TYPE))
    valid = valid_call(name, state)

    @st.composite
    def mutated(draw):
        keys, argv = draw(valid)
        keys, argv = list(keys), list(argv)
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
            draw(_mutate(keys, argv, pool))
        ro = name == "baton_v2_version" and draw(st.booleans())
        return Call(name, keys, argv, ro)

    @st.composite
    def random_call(draw):
        keys = draw(st.lists(st.one_of(pool, hostile_values()), max_size=12))
        argv = draw(st.lists(hostile_values(), max_size=14))
        return Call(name, keys, argv)

    return st.one_of(mutated(), mutated(), mutated(), random_call())
