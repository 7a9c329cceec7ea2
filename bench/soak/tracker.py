"""Follows every soak task through the namespace's events stream (docs/keyspace.md, "Event
entry"): one reader thread XREADs baton:v2:{NS}:events from where it left off, so every time below
is a Redis server time (the entry id), and nothing is written per task for the measurement.

Per task it records the enqueue time (new -> queued/scheduled), its due time (enqueue + delay),
its first start (queued -> active) and its end (-> done), and counts its runs. Latencies:
  immediate: enqueue -> first start, enqueue -> done;
  delayed:   due -> first start, due -> done (how late after the due time);
  retried:   enqueue -> done (one failed attempt and its backoff included).
A run beyond the expected ones (1, or 2 for a retried task) is a duplicate; a task that dies or
ends otherwise than done is an anomaly. The events stream is capped (events_maxlen): the reader
reports a gap when the oldest entry left is newer than the last one it read."""

import array
import threading
import time

from producer import DELAYED, IMMEDIATE, RETRIED

LATENCY_KINDS = ("immediate_start", "immediate_done", "delayed_start", "delayed_done",
                 "retried_done")


def _ms(entry_id):
    return int(entry_id.split(b"-", 1)[0])


class Latencies:
    """Latency samples (ms) per kind."""

    def __init__(self):
        self.samples = {kind: array.array("q") for kind in LATENCY_KINDS}

    def add(self, kind, ms):
        self.samples[kind].append(ms)


class Tracker(threading.Thread):
    def __init__(self, r, events_key):
        super().__init__(name="tracker", daemon=True)
        self.r = r
        self.events_key = events_key
        self.lock = threading.Lock()
        self.live = {}  # seq -> [cls, delay_s, expected_runs, t_enq, t_start, runs]
        self.done = bytearray()  # done[seq] = 1 once its done event was read
        self.done_count = 0
        self.window = Latencies()
        self.overall = Latencies()
        self.duplicates = []  # (task id, runs, expected)
        self.anomalies = []  # (task id, from, to, error)
        self.retries = 0
        self.gaps = 0
        self.last_id = b"0-0"
        self.stop_event = threading.Event()
        self.error = None

    def expect(self, seq, cls, delay_s, expected_runs):
        with self.lock:
            self.live[seq] = [cls, delay_s, expected_runs, None, None, 0]
            if seq >= len(self.done):
                self.done.extend(bytes(max(4096, seq + 1 - len(self.done))))

    def take_window(self):
        """The latencies recorded since the last call."""
        with self.lock:
            window, self.window = self.window, Latencies()
        return window

    def run(self):
        try:
            while not self.stop_event.is_set():
                if self.read_once() == 0:
                    time.sleep(0.2)
        except Exception as e:  # reported by the driver as a failed run
            self.error = repr(e)

    def read_once(self):
        """Reads what the events stream has past last_id; returns the number of entries."""
        oldest = self.r.xrange(self.events_key, count=1)
        if oldest and self.last_id != b"0-0" and _ms_seq(oldest[0][0]) > _ms_seq(self.last_id):
            self.gaps += 1
        reply = self.r.xread({self.events_key: self.last_id}, count=5000)
        if not reply:
            return 0
        entries = reply[0][1]
        with self.lock:
            for entry_id, fields in entries:
                self._apply(_ms(entry_id), fields)
        self.last_id = entries[-1][0]
        return len(entries)

    def _apply(self, t, f):
        frm, to = f[b"from"], f[b"to"]
        for raw_id in f[b"ids"].split():
            if not raw_id.startswith(b"s"):
                continue
            seq = int(raw_id[1:])
            task = self.live.get(seq)
            if task is None:
                if to == b"active" or to == b"done":
                    self.duplicates.append((raw_id.decode(), "after done", ""))
                continue
            cls, delay_s, expected_runs, t_enq, t_start, runs = task
            if t_enq is None and frm != b"new":
                continue  # its enqueue event was trimmed unread (a gap, counted): no latency
            if frm == b"new":
                task[3] = t
            elif to == b"active":
                task[5] = runs = runs + 1
                if runs > expected_runs:
                    self.duplicates.append((raw_id.decode(), runs, expected_runs))
                if t_start is None:
                    task[4] = t
                    if cls == IMMEDIATE:
                        self._add("immediate_start", t - t_enq)
                    elif cls == DELAYED:
                        self._add("delayed_start", t - (t_enq + delay_s * 1000))
            elif to == b"done":
                if cls == IMMEDIATE:
                    self._add("immediate_done", t - t_enq)
                elif cls == DELAYED:
                    self._add("delayed_done", t - (t_enq + delay_s * 1000))
                else:
                    self._add("retried_done", t - t_enq)
                del self.live[seq]
                self.done[seq] = 1
                self.done_count += 1
            elif to == b"retry" and cls == RETRIED:
                self.retries += 1
            elif to not in (b"queued", b"scheduled"):
                self.anomalies.append((raw_id.decode(), frm.decode(), to.decode(),
                                       f.get(b"error", b"").decode("utf-8", "replace")))

    def _add(self, kind, ms):
        self.window.add(kind, ms)
        self.overall.add(kind, ms)


def _ms_seq(entry_id):
    ms, seq = entry_id.split(b"-", 1)
    return int(ms), int(seq)
