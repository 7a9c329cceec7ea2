"""UUIDv7 by Baton's rule (RFC 9562): 48-bit Unix ms, version 7, variant 10, lowercase."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid

from baton.ids import uuid7, uuid7_time_ms

CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_layout_and_time() -> None:
    before = time.time_ns() // 1_000_000
    task_id = uuid7()
    after = time.time_ns() // 1_000_000
    assert CANONICAL.fullmatch(task_id), task_id
    parsed = uuid.UUID(task_id)
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    assert before <= uuid7_time_ms(task_id) <= after + 1  # +1: a counter overflow may run ahead


def test_ids_sort_in_creation_order_across_threads() -> None:
    out: list[list[str]] = [[] for _ in range(4)]

    def make(i: int) -> None:
        out[i] = [uuid7() for _ in range(5000)]

    threads = [threading.Thread(target=make, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [x for chunk in out for x in chunk]
    assert len(set(every)) == len(every)
    for chunk in out:
        assert chunk == sorted(chunk)


def test_forked_child_makes_its_own_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(write, uuid7().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child_id = os.read(read, 64).decode()
    os.close(read)
    parent_id = uuid7()
    assert CANONICAL.fullmatch(child_id)
    assert child_id != parent_id
