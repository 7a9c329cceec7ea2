"""``baton-worker module:attribute``: runs the Worker an application defines, the way
``celery -A proj worker`` or ``dramatiq module`` do.

    baton-worker myapp.tasks:app [--redis URL] [--maintenance] [--concurrency N]

The attribute is a :class:`baton.Worker` (or a function returning one). The current directory is
importable. SIGTERM or Ctrl-C stops gracefully; a second one stops at once.

Exit status: 0 after a stop, 1 when Redis cannot be reached at start or the worker failed while
running, 2 for a bad command line or an application that cannot be loaded, 3 when the functions
library in Redis is missing or another version (run ``baton init``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from .errors import BatonError, VersionMismatchError
from .worker import Worker


def load_worker(spec: str) -> Worker:
    """The Worker named by ``module:attribute`` (``module`` alone: its ``app``)."""
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    target = getattr(module, attr or "app")
    if not isinstance(target, Worker) and callable(target):
        target = target()
    if not isinstance(target, Worker):
        raise TypeError(f"{spec} is not a baton.Worker (got {type(target).__name__})")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="baton-worker",
                                     description="Run the baton.Worker an application defines.")
    parser.add_argument("app", help="module:attribute of a baton.Worker, e.g. myapp.tasks:app")
    parser.add_argument("--redis", help="Redis URL (overrides the Worker's)")
    parser.add_argument("--concurrency", type=int, help="default slots per task type")
    parser.add_argument("--maintenance", action="store_true",
                        help="also promote due tasks and reclaim expired leases (no batond)")
    parser.add_argument("--log-level", default=os.environ.get("BATON_LOG_LEVEL", "INFO"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.path.insert(0, os.getcwd())
    try:
        worker = load_worker(args.app)
    except Exception as e:  # noqa: BLE001 - any import problem is a usage error here
        print(f"baton-worker: cannot load {args.app}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if args.redis:
        worker.redis_url = args.redis
    if args.concurrency is not None:
        if args.concurrency < 1:
            parser.error("--concurrency must be >= 1")
        worker.concurrency = args.concurrency
    if args.maintenance:
        worker.maintenance = True
    try:
        stats = worker.run()
    except VersionMismatchError as e:
        print(f"baton-worker: {e}", file=sys.stderr)
        return 3
    except BatonError as e:
        print(f"baton-worker: {e.code}: {e}", file=sys.stderr)
        return 2 if e.code == "invalid_argument" else 1
    logging.getLogger("baton.worker").info(
        "stopped: %d succeeded, %d failed (%d dead), %d malformed", stats.succeeded,
        stats.failed, stats.dead, stats.malformed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
