"""Durable enqueue (opt-in ``wait_replicas``): ``WAIT replicas timeout`` sent right after the
enqueue calls on the same connection, so it waits for exactly those writes; fewer
acknowledgements make the enqueue fail with UnavailableError (docs: "Redis Cluster")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _generated as gen
from .errors import UnavailableError, invalid


@dataclass(frozen=True)
class Wait:
    """WAIT replicas timeout_ms after the calls sent to one node."""

    replicas: int
    timeout_ms: int

    @staticmethod
    def of(replicas: int, timeout: float) -> Wait | None:
        """The setting of a Client (None: off); InvalidArgumentError for bad values."""
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            raise invalid("wait_replicas", f"must be an integer >= 0 (got {replicas!r})")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
                not 0 < timeout <= 3600:
            raise invalid("wait_timeout", f"must be seconds, > 0 and <= 3600 (got {timeout!r})")
        return Wait(replicas, max(1, round(timeout * 1000))) if replicas else None

    def command(self) -> list[gen.Arg]:
        return ["WAIT", self.replicas, self.timeout_ms]

    def check(self, node: str, acked: Any) -> UnavailableError | None:
        """None when enough replicas acknowledged; else the error of every call it covered."""
        if isinstance(acked, int) and acked >= self.replicas:
            return None
        got = acked if isinstance(acked, int) else f"none ({acked})"
        return UnavailableError(
            f"the task was written on the primary {node} but acknowledged by only {got} of "
            f"{self.replicas} replica(s) within {self.timeout_ms} ms (wait_replicas): it may "
            f"still run, but it is not known to be durable")
