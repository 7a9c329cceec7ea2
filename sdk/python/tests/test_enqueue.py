"""Reading a baton_v2_enqueue reply (no Redis): a flat array of 2N values, status then detail
for each task in call order; any other shape is an InternalError naming the function."""

from __future__ import annotations

import pytest

import baton
from baton._enqueue import EnqueueResult, EnqueueStatus, results

IDS = ["a", "b", "c", "d"]


def test_flat_reply_is_read_in_call_order() -> None:
    reply = [b"queued", b"1722489600000-0", b"scheduled", 1722489660000,
             b"duplicate", b"active", b"unique_conflict", b"holder"]
    assert results(IDS, reply) == [
        EnqueueResult("a", EnqueueStatus.QUEUED, stream_id="1722489600000-0"),
        EnqueueResult("b", EnqueueStatus.SCHEDULED, due_ms=1722489660000),
        EnqueueResult("c", EnqueueStatus.DUPLICATE, state="active"),
        EnqueueResult("d", EnqueueStatus.UNIQUE_CONFLICT, holder_id="holder"),
    ]
    assert results([], []) == []


@pytest.mark.parametrize("reply", [
    [[b"queued", b"1-0"], [b"duplicate", b"active"]],  # the old N nested pairs: length N
    [b"queued", b"1-0", b"duplicate"],  # odd length
    [b"queued", b"1-0"],  # N = 1 for two tasks
    [b"queued", b"1-0", b"duplicate", b"active", b"queued", b"2-0"],  # 2N + 2
    [],
    b"queued",
    None,
], ids=["pairs", "odd", "short", "long", "empty", "bytes", "none"])
def test_reply_of_wrong_length_or_shape_is_internal(reply: object) -> None:
    with pytest.raises(baton.InternalError, match=r"^baton_v2_enqueue: unexpected reply"):
        results(["a", "b"], reply)


def test_unknown_status_is_internal() -> None:
    with pytest.raises(baton.InternalError, match=r"^baton_v2_enqueue: unexpected result"):
        results(["a", "b"], [b"queued", b"1-0", b"lost", b"x"])
