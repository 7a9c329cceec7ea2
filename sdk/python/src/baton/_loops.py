"""How the worker's loops live with failures: the reconnect backoff, and logging an outage once
when it starts and once when it ends (never once per retry)."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("baton.worker")


class Backoff:
    """100 ms doubling to 5 s, the reconnect delay of every Baton component."""

    def __init__(self, first: float = 0.1, cap: float = 5.0):
        self._first, self._cap, self._next = first, cap, first

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self._cap)
        return delay

    def reset(self) -> None:
        self._next = self._first


class Outage:
    """Logs one loop's outage: when it starts, when its error changes, when it ends."""

    def __init__(self, what: str):
        self.what = what
        self._since: float | None = None
        self._last = ""

    def failed(self, error: BaseException) -> None:
        text = str(error)
        if self._since is None:
            self._since = time.monotonic()
            log.warning("%s failed, retrying: %s", self.what, text)
        elif text != self._last:
            log.warning("%s still failing: %s", self.what, text)
        self._last = text

    def ok(self) -> None:
        if self._since is not None:
            log.warning("%s recovered after %.1f s", self.what, time.monotonic() - self._since)
            self._since = None
            self._last = ""
