"""Baton's Python SDK: producer (sync and asyncio) and worker for Baton task queues.

    from baton import Client, Worker, Task

Producer::

    with Client("redis://127.0.0.1:6379") as client:
        result = client.enqueue("shop", "send_email", {"to": "ada@example.com"})

Worker::

    app = Worker("redis://127.0.0.1:6379")

    @app.task("shop", "send_email")
    def send_email(task: Task) -> None:
        print(task.payload["to"])

    app.run()   # or: baton-worker mymodule:app
"""

from ._enqueue import EnqueueResult, EnqueueStatus, TaskRequest
from .asyncio_client import AsyncClient
from .client import Client
from .contract import TaskDocument, parse_task_document
from .errors import (
    AlreadyExistsError,
    BatonError,
    ConflictError,
    InternalError,
    InvalidArgumentError,
    NonRetryableError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
    VersionMismatchError,
)
from .ids import uuid7
from .task import Task
from .worker import Registration, RetryPolicy, Worker, WorkerStats

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError",
    "AsyncClient",
    "BatonError",
    "Client",
    "ConflictError",
    "EnqueueResult",
    "EnqueueStatus",
    "InternalError",
    "InvalidArgumentError",
    "NonRetryableError",
    "NotFoundError",
    "Registration",
    "ResourceExhaustedError",
    "RetryPolicy",
    "Task",
    "TaskDocument",
    "TaskRequest",
    "UnavailableError",
    "VersionMismatchError",
    "Worker",
    "WorkerStats",
    "parse_task_document",
    "uuid7",
]
