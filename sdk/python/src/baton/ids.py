"""Task ids: RFC 9562 UUIDv7 in lowercase canonical form, by Baton's rule.

Layout (128 bits): unix_ts_ms (48) | version 0b0111 (4) | rand_a (12) | variant 0b10 (2) |
rand_b (62). As in Baton's C++ library (RFC 9562 section 6.2, method 1), rand_a is a counter:
on a new millisecond it starts at a random value below 2048, within the same millisecond (or when
the wall clock steps back) it is incremented, and when it would overflow 12 bits the timestamp is
advanced by one ms. Ids made by one process therefore sort in creation order as strings.
"""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def _reset_after_fork() -> None:
    # A forked child must not continue its parent's sequence (os.urandom needs no reseed).
    global _lock, _last_ms, _counter
    _lock = threading.Lock()
    _last_ms = 0
    _counter = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def uuid7() -> str:
    """A new UUIDv7, e.g. ``0190f3c1-7a2e-7cc1-9a51-3b0d8e2f4c11``. Thread-safe."""
    global _last_ms, _counter
    rand = int.from_bytes(os.urandom(10), "big")  # 11 bits of counter start + 62 bits of rand_b
    now_ms = time.time_ns() // 1_000_000
    with _lock:
        if now_ms > _last_ms:
            _last_ms = now_ms
            _counter = rand >> 69  # random 0..2047
        else:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = rand >> 69
        ms, counter = _last_ms, _counter
    hi = (ms & 0xFFFF_FFFF_FFFF) << 16 | 0x7000 | counter
    lo = 0x8000_0000_0000_0000 | (rand & 0x3FFF_FFFF_FFFF_FFFF)
    h = f"{hi:016x}{lo:016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid7_time_ms(task_id: str) -> int:
    """The Unix ms timestamp of a UUIDv7 made by :func:`uuid7`."""
    return int(task_id.replace("-", "")[:12], 16)
