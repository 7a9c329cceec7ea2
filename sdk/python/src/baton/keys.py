"""Key names of one namespace (docs/keyspace.md), built from the generated key patterns.

This is the only place where the SDK builds a key. A call's KEYS come from the generated FCALL
builders, which look each key kind up in the mapping :meth:`Keyspace.for_type` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from . import contract
from ._generated import GLOBAL_KEYS, KEY_KINDS, MAX_PARTITIONS
from ._partitions import storage_namespace


def _fill(pattern: str, slot: str, value: str) -> str:
    """The pattern's trailing ``:SLOT`` (TYPE, KEY) replaced by value."""
    if not pattern.endswith(":" + slot):
        raise ValueError(f"key pattern {pattern} does not end in :{slot}")
    return pattern[: -len(slot)] + value


class Keyspace:
    """Every key of one namespace ``NS``: ``baton:v2:{NS}:...``, or of its partition p >= 1:
    ``baton:v2:{NS:p}:...`` (docs/cluster.md, "Partitions").

    The ``{NS}`` hash tag puts all keys of a namespace (of one partition) in one Redis Cluster
    slot.
    """

    def __init__(self, namespace: str, partition: int = 0):
        contract.check_name("namespace", namespace)
        if not 0 <= partition < MAX_PARTITIONS:
            raise ValueError(f"partition must be 0..{MAX_PARTITIONS - 1} (got {partition})")
        self.namespace = namespace
        self.partition = partition
        self.storage = storage_namespace(namespace, partition)  # NS, or NS:p for p >= 1
        self._tag = "{" + self.storage + "}"
        self._by_type: dict[str, Mapping[str, str]] = {}

    def of(self, kind: str, task_type: str | None = None) -> str:
        """The key of a key kind (``stream``, ``tasks``, ..., or a global key such as
        ``cron_state``); typed kinds need the task type."""
        if kind in GLOBAL_KEYS:
            return GLOBAL_KEYS[kind]
        pattern, typed = KEY_KINDS[kind]
        key = pattern.replace("{NS}", self._tag)
        if typed:
            if task_type is None:
                raise ValueError(f"key kind {kind} needs a task type")
            key = _fill(key, "TYPE", task_type)
        return key

    def for_type(self, task_type: str) -> Mapping[str, str]:
        """Every key kind -> key for one task type (cached: the hot paths build no strings).
        The ``unique`` kind is absent: its keys depend on the unique key, see :meth:`unique`."""
        keys = self._by_type.get(task_type)
        if keys is None:
            contract.check_name("task_type", task_type)
            built = {kind: self.of(kind, task_type) for kind in KEY_KINDS if kind != "unique"}
            built.update(GLOBAL_KEYS)
            keys = MappingProxyType(built)
            self._by_type[task_type] = keys
        return keys

    def unique(self, unique_key: str) -> str:
        """The lock key of a unique key: ``baton:v2:{NS}:unique:KEY``."""
        return _fill(self.of("unique"), "KEY", unique_key)
