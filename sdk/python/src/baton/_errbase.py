"""The base class of Baton's errors (the code classes are generated from contract/errors.json)."""

from __future__ import annotations

from typing import ClassVar


class BatonError(Exception):
    """An error of the Baton contract.

    ``code`` is the contract code (``invalid_argument``, ``not_found``, ...), ``retryable`` says
    whether the same call may succeed later without a change by the caller, ``message`` is the
    text (for ``invalid_argument``: ``"<field>: <rule>"``), ``field`` the offending field when
    known and ``hint`` what to do, when there is advice.
    """

    code: ClassVar[str] = "internal"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.hint = hint

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} ({self.hint})"
