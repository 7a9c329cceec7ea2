"""Partitions: one namespace spread over several Redis Cluster slots (docs/cluster.md,
"Partitions").

``HGET baton:v2:partitions NS`` gives the partition count P (absent: 1). Partition 0 is NS
itself; partition p >= 1 has the keys of the *storage namespace* ``NS:p``. A task goes to
partition ``fnv1a32(UTF-8 bytes of its id) mod P``, the rule of every SDK
(contract/fixtures/partitions.json), so an id enqueued twice meets itself. The task document
keeps ``namespace: NS``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Sequence

from . import _generated as gen
from .errors import InternalError

log = logging.getLogger("baton.partitions")

_MASK = 0xFFFFFFFF
_DIGITS = re.compile(rb"[0-9]+")
_warned: set[tuple[str, bytes]] = set()  # (namespace, value) already logged as unparsable


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32 bits (offset basis and prime from contract/protocol.json)."""
    h = gen.FNV1A32_OFFSET_BASIS
    for byte in data:
        h = ((h ^ byte) * gen.FNV1A32_PRIME) & _MASK
    return h


def partition_of(task_id: str, count: int) -> int:
    """The partition (0..count-1) of a task id."""
    if count <= 1:
        return 0
    return fnv1a32(task_id.encode("utf-8")) % count


def storage_namespace(namespace: str, partition: int) -> str:
    """Whose keys partition p of namespace has: the namespace for 0, ``NS:p`` otherwise."""
    return namespace if partition == 0 else f"{namespace}:{partition}"


def parse_count(namespace: str, value: object) -> int:
    """A stored partition count (the "counts" of contract/fixtures/partitions.json): absent =
    1; ASCII digits worth at least 1 = their value, at most MAX_PARTITIONS however many digits;
    anything else = 1, with a warning once per value (never an error: producers and workers
    keep going on partition 0, where an unpartitioned namespace's tasks are)."""
    if value is None:
        return 1
    raw = value if isinstance(value, bytes) else str(value).encode()
    count = 0
    if _DIGITS.fullmatch(raw):
        for digit in raw:  # capped while read: int() refuses 4301+ digits
            count = min(count * 10 + digit - 0x30, gen.MAX_PARTITIONS)
    if count >= 1:
        return count
    if (namespace, raw) not in _warned:  # once per value, not at every refresh
        _warned.add((namespace, raw))
        log.warning("%s %s: %r is not a partition count (ASCII digits worth at least 1); "
                    "using 1", gen.PARTITIONS_KEY, namespace, raw[:40])
    return 1


def hmget_command(namespaces: Sequence[str]) -> list[str]:
    """The one command that reads the counts of several namespaces."""
    return ["HMGET", gen.PARTITIONS_KEY, *namespaces]


def counts_of(namespaces: Sequence[str], reply: object) -> dict[str, int]:
    """The counts in the reply to :func:`hmget_command` (InternalError when it is not one
    value per namespace)."""
    if not isinstance(reply, list) or len(reply) != len(namespaces):
        raise InternalError(f"HMGET {gen.PARTITIONS_KEY}: unexpected reply {reply!r:.100}")
    return {ns: parse_count(ns, value) for ns, value in zip(namespaces, reply, strict=True)}


class PartitionCounts:
    """Partition counts, each kept up to PARTITIONS_REFRESH_SECONDS (then read again).

    Without I/O: :meth:`stale` says which namespaces to read (one HMGET), :meth:`update`
    takes the reply. Thread-safe enough for the sync Client: two threads that both see a stale
    count both read it, and the later reply wins.
    """

    def __init__(self, refresh_seconds: float = gen.PARTITIONS_REFRESH_SECONDS):
        self._refresh = refresh_seconds
        self._entries: dict[str, tuple[int, float]] = {}

    def stale(self, namespaces: Iterable[str], now: float | None = None) -> list[str]:
        """The namespaces never read or read longer than refresh_seconds ago (each once)."""
        now = time.monotonic() if now is None else now
        out: list[str] = []
        for ns in namespaces:
            entry = self._entries.get(ns)
            if (entry is None or now - entry[1] >= self._refresh) and ns not in out:
                out.append(ns)
        return out

    def update(self, namespaces: Sequence[str], reply: object, now: float | None = None) -> None:
        """Stores an HMGET reply (one value per namespace; InternalError otherwise)."""
        counts = counts_of(namespaces, reply)
        now = time.monotonic() if now is None else now
        for ns, count in counts.items():
            self._entries[ns] = (count, now)

    def count(self, namespace: str) -> int:
        """The count last read (1 when never read)."""
        entry = self._entries.get(namespace)
        return 1 if entry is None else entry[0]

    def partition(self, namespace: str, task_id: str) -> str:
        """The storage namespace a task id goes to."""
        return storage_namespace(namespace, partition_of(task_id, self.count(namespace)))
