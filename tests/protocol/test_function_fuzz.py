"""Lua input fuzzing of every function of the library (baton_v2): random and malformed KEYS and
ARGV, generated with Hypothesis (function_fuzz_calls.py), against a real redis-server holding a
realistic state (function_fuzz_state.py: tasks queued, leased, expired, scheduled, retrying, dead,
finished, a foreign stream entry, a rescue in progress, a second namespace).

Property of every call, each made on the same pristine state:
- it succeeds, or its error reply starts with a BATON_* code of contract/errors.json (a raw Lua
  error, 'ERR ...' of a Redis command the library ran, or any other reply is a library bug);
  a BATON_INVALID names the field and the rule ('BATON_INVALID <field>: <rule>');
- an error wrote nothing: every key's DEBUG DIGEST-VALUE, expiry and, for streams, DUMP (consumer
  groups and pending entries, which DEBUG DIGEST leaves out) are unchanged;
- a success wrote only keys of the namespace of its KEYS[1] (baton_v2_cron_mark: only
  baton:cron:state; baton_v2_version: nothing);
- redis-server is still running.

Time: BATON_FUZZ_SECONDS in all (default 40), shared evenly by the functions. Seeded: the seed is
printed; BATON_FUZZ_SEED=S replays a run, BATON_FUZZ_ONLY=baton_v2_fail,... limits it to some
functions. A failure prints Hypothesis' minimal failing call.

Run: cd /work/main && BATON_FUZZ_SECONDS=40 /usr/bin/python3 -m unittest discover -s tests/protocol \
       -p 'test_function_fuzz.py' -v
"""

import collections
import os
import random
import sys
import tempfile
import time
import unittest

import redis

# Hypothesis keeps a cache (and, unless told otherwise, its example database) in .hypothesis/ of
# the working directory: keep the checkout clean.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      os.path.join(tempfile.gettempdir(), "baton-hypothesis"))
from hypothesis import HealthCheck, Phase, given, seed, settings

import baton_generated as gen
import baton_protocol as bp
import function_fuzz_calls as fc
import function_fuzz_state as fs
import redis_harness

TOTAL_SECONDS = float(os.environ.get("BATON_FUZZ_SECONDS", "40"))
SEED = int(os.environ.get("BATON_FUZZ_SEED") or random.SystemRandom().randrange(2 ** 32))
ONLY = [f for f in os.environ.get("BATON_FUZZ_ONLY", "").split(",") if f]
FUNCTIONS = [f for f in fc.FUNCTIONS if not ONLY or f in ONLY]
PER_FUNCTION_S = TOTAL_SECONDS / max(1, len(FUNCTIONS))
BATCH = 50  # examples per Hypothesis run; runs repeat (next seed) until the time share is used
BATON_CODES = set(gen.ERROR_CODES)


def _namespace_prefix(key):
    """'baton:v2:{NS}:' of a key, or None."""
    if key.startswith(b"baton:v2:{"):
        end = key.find(b"}:", 10)
        if end > 10:
            return key[:end + 2]
    return None


class FunctionFuzzTest(unittest.TestCase):
    server = None
    stats = collections.OrderedDict()  # function -> Counter of outcomes (ok, BATON_INVALID, ...)
    seconds = collections.Counter()
    fields_refused = {}  # function -> the distinct fields its BATON_INVALID replies named

    @classmethod
    def setUpClass(cls):
        if redis_harness.CLUSTER_MODE:
            raise unittest.SkipTest(
                "on a cluster: the fuzz keeps its pristine state in db 1 (SELECT / COPY ... DB) "
                "and a cluster has only db 0; its calls mix keys of several slots on purpose")
        print(f"\nfunction fuzz: seed {SEED} (replay: BATON_FUZZ_SEED={SEED}), "
              f"{TOTAL_SECONDS:g} s for {len(FUNCTIONS)} functions", file=sys.stderr)
        cls.server = redis_harness.RedisServer(["--enable-debug-command", "local"]).start()
        cls.r = cls.server.client()
        bp.load_library(cls.r)
        cls.state = fs.build_state(cls.r)
        fs.save_pristine(cls.r)
        cls.pristine_keys = sorted(cls.r.keys("*"))
        cls.pristine = fs.fingerprint(cls.r)
        cls.dirty = False

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.server.stop()
        if cls.stats:
            print(_report(cls.stats, cls.seconds, cls.fields_refused), file=sys.stderr)

    def test_restore_gives_back_the_same_state(self):
        # The property compares with the pristine fingerprint: restore() must reproduce it
        # exactly, and the fingerprint must see a change in a consumer group.
        fs.restore(self.r, self.pristine_keys)
        self.assertEqual(fs.fingerprint(self.r), self.pristine)
        stream = bp.Keys(fs.NS).stream(fs.TYPE)
        self.r.xgroup_createconsumer(stream, fs.GROUP, "someone")
        self.assertEqual(fs.changed_keys(self.pristine, fs.fingerprint(self.r)),
                         [stream.encode()])
        fs.restore(self.r, self.pristine_keys)
        self.assertEqual(fs.fingerprint(self.r), self.pristine)

    def test_calls_that_broke_the_library_once(self):
        # Minimal calls the fuzzer found (each got a raw Redis error, some after writing); they
        # must stay fixed whatever the time budget of a run.
        counter = collections.Counter()
        for call in _regressions(self.state):
            with self.subTest(call=call):
                self.check_call(call, counter)

    def check_call(self, call, counter):
        """The property of one call (see the module docstring)."""
        cls = type(self)
        if cls.dirty:
            fs.restore(self.r, self.pristine_keys)
            cls.dirty = False
        command = "FCALL_RO" if call.ro else "FCALL"
        try:
            reply = self.r.execute_command(command, call.name, len(call.keys), *call.keys,
                                           *call.argv)
        except redis.exceptions.ConnectionError as e:
            raise AssertionError(f"redis-server died or dropped the connection: {e}") from None
        except redis.exceptions.ResponseError as e:
            message = str(e)
            code = message.split(" ", 1)[0]
            counter[code if code in BATON_CODES else "other error"] += 1
            if code == "BATON_INVALID":  # the field it names: how deep the calls got
                self.fields_refused.setdefault(call.name, set()).add(
                    message.split(":", 1)[0].split(" (task ")[0])
            written = fs.changed_keys(self.pristine, fs.fingerprint(self.r))
            if written:
                cls.dirty = True
            problems = []
            if code not in BATON_CODES:
                problems.append(f"error reply without a BATON_* code: {message!r}")
            elif code == "BATON_INVALID" and ": " not in message:
                problems.append(f"BATON_INVALID that names no field and rule: {message!r}")
            if written:
                problems.append(f"error reply {message!r} after writing {written}")
            if problems:
                self.fail("; ".join(problems))
            return
        finally:
            self.assertIsNone(self.server.process.poll(), "redis-server exited")
        del reply
        counter["ok"] += 1
        cls.dirty = True
        changed = fs.changed_keys(self.pristine, fs.fingerprint(self.r))
        if call.name == "baton_v2_version":
            outside = changed  # read-only
        elif call.name == "baton_v2_cron_mark":
            outside = [k for k in changed if k != gen.GLOBAL_KEYS["cron_state"].encode()]
        else:
            prefix = _namespace_prefix(call.keys[0]) if call.keys else None
            outside = [k for k in changed if prefix is None or not k.startswith(prefix)]
        self.assertEqual(outside, [], "a successful call wrote keys outside its namespace")

    def fuzz(self, name):
        counter = self.stats.setdefault(name, collections.Counter())
        strategy = fc.calls(name, self.state)

        def check(call):
            self.check_call(call, counter)

        start = time.monotonic()
        batch = 0
        try:
            while batch == 0 or time.monotonic() - start < PER_FUNCTION_S:
                batch_seed = random.Random(f"{SEED}:{name}:{batch}").randrange(2 ** 32)
                run = settings(max_examples=BATCH, deadline=None, database=None,
                               print_blob=True, phases=[Phase.generate, Phase.shrink],
                               suppress_health_check=list(HealthCheck))(
                    seed(batch_seed)(given(strategy)(check)))
                try:
                    run()
                except Exception:
                    print(f"\n{name}: failing Hypothesis run {batch} (replay with "
                          f"BATON_FUZZ_SEED={SEED} BATON_FUZZ_ONLY={name})", file=sys.stderr)
                    raise
                batch += 1
        finally:
            self.seconds[name] += time.monotonic() - start


def _regressions(state):
    """The calls of test_calls_that_broke_the_library_once, on the fuzz state."""
    keys = bp.Keys(fs.NS)
    task_id, sid, _, holder = state.active[0]
    new_consumer = "w-first-seen"  # its lease length would be written before the bad SID

    def call(name, fixed=None, items=(), extra_keys=()):
        k, argv = bp.call_args(keys, name, fs.TYPE, fixed, items, extra_keys)
        return fc.Call(name, [x.encode() for x in k], argv)

    def spec(i, **kw):
        values = dict(id=i, payload="{}", max_retry=0, delay_seconds=0, created_at=fs.CREATED,
                      execution_timeout="", extra="", run_at_ms=0, unique_key="",
                      unique_ttl_s=1)
        values.update(kw)
        return values

    out = []
    for jitter in ("nan", "-nan", "NaN"):  # strtod reads them; NaN compared false with 0 and 1
        out.append(call("baton_v2_fail", {
            "group": fs.GROUP, "consumer": holder, "id": task_id, "sid": sid, "kind": "error",
            "error": "", "stack": "", "base_ms": 0, "max_ms": 0, "jitter": jitter}))
    for count in ("01", "0010"):  # Redis' own integer parser refuses leading zeros
        out.append(call("baton_v2_dequeue", {"group": fs.GROUP, "consumer": holder,
                                             "count": count, "lease_ms": 0}))
        out.append(call("baton_v2_promote", {"limit": count}))
    for bad in ("18446744073709551616-0", "1-18446744073709551616", "9" * 20 + sid):
        out.append(call("baton_v2_ack", {"group": fs.GROUP, "consumer": holder, "n": 2},
                        [{"id": task_id, "sid": sid}, {"id": task_id, "sid": bad}]))
        out.append(call("baton_v2_start",
                        {"group": fs.GROUP, "consumer": new_consumer, "lease_ms": 0, "n": 1},
                        [{"sid": bad, "id": task_id, "attempt": "0"}]))
    # The unknown setting was echoed raw: its NUL ended the reply at 'BATON_INVALID '.
    for setting in ("\x00", "a\x00b", "\n"):
        out.append(fc.Call("baton_v2_configure", [keys.config().encode()],
                           [setting.encode(), b""]))
    out.append(call("baton_v2_enqueue", {"n": 2},
                    [spec("n1"), spec("n2", unique_key="order-2", unique_ttl_s="010")],
                    [keys.unique("order-2")]))
    return out


def _fuzz_test(name):
    def test(self):
        self.fuzz(name)
    test.__doc__ = f"{name}: every call succeeds or is a BATON_* error that wrote nothing"
    return test


for _name in FUNCTIONS:
    setattr(FunctionFuzzTest, f"test_fuzz_{_name}", _fuzz_test(_name))


def _report(stats, seconds, fields_refused):
    lines = ["function fuzz results (calls, calls/s, distinct fields refused; outcomes):"]
    total_calls, total_s = 0, 0.0
    for name, c in stats.items():
        calls = sum(c.values())
        s = seconds.get(name, 0.0)
        total_calls += calls
        total_s += s
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
        rate = calls / s if s else 0.0
        fields = len(fields_refused.get(name, ()))
        lines.append(f"  {name:24} {calls:6} calls {rate:5.0f}/s {fields:3} fields  "
                     f"({outcomes})")
    if total_s:
        lines.append(f"  {'all':24} {total_calls:6} calls {total_calls / total_s:5.0f}/s in "
                     f"{total_s:.1f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    unittest.main()
