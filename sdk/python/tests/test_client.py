"""The producer, sync and asyncio, against a real Redis: outcomes, bytes, validation, errors."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timedelta, timezone

import pytest
import redis

import baton
from baton import EnqueueStatus, TaskRequest
from baton.keys import Keyspace
from harness import RedisServer, State, free_port


def test_queued_task_is_written_exactly(client: baton.Client, state: State, ns: str) -> None:
    payload = b'{"n":12345678901234567890,"f":1.10,"s":"caf\\u00e9"}'
    result = client.enqueue(ns, "email", payload, max_retry=2, execution_timeout=30,
                            extra={"headers": {"producer": "test"}, "x_new": [1, 2]})
    assert result.status == EnqueueStatus.QUEUED == "queued"
    assert result.written and result.stream_id
    assert state.record(result.task_id) == ("queued", "email", 0, result.stream_id)
    entry = state.delivered("email")[result.task_id]
    assert entry["sid"].decode() == result.stream_id
    assert entry["payload"] == payload  # byte for byte
    assert entry["max_retry"] == b"2"
    assert entry["execution_timeout"] == b"30"
    assert abs(int(entry["created_at"]) - time.time()) < 5  # Unix seconds
    assert json.loads(entry["extra"]) == {"headers": {"producer": "test"}, "x_new": [1, 2]}


def test_mapping_payload_is_compact_utf8(client: baton.Client, state: State, ns: str) -> None:
    result = client.enqueue(ns, "email", {"to": "ada@example.com", "name": "Zoë"})
    entry = state.delivered("email")[result.task_id]
    assert entry["payload"] == '{"to":"ada@example.com","name":"Zoë"}'.encode()


def test_delay_and_at_schedule(client: baton.Client, state: State, ns: str,
                               r: redis.Redis) -> None:
    now_ms = int(r.time()[0]) * 1000
    delayed = client.enqueue(ns, "email", {}, delay=timedelta(seconds=60))
    assert delayed.status == "scheduled"
    assert delayed.due_ms is not None and abs(delayed.due_ms - (now_ms + 60_000)) < 5000
    assert state.record(delayed.task_id) == ("scheduled", "email", 0, "")
    at = datetime.now(timezone.utc) + timedelta(hours=1)
    timed = client.enqueue(ns, "email", {}, at=at)
    assert timed.status == "scheduled"
    assert timed.due_ms is not None and abs(timed.due_ms - at.timestamp() * 1000) < 1000
    body = json.loads(r.hget(Keyspace(ns).of("bodies"), timed.task_id))
    assert 3590 <= int(body["delay_seconds"]) <= 3600
    past = client.enqueue(ns, "email", {}, at=time.time() - 10)
    assert past.status == "queued"


def test_at_more_than_a_year_ahead_is_refused(client: baton.Client, ns: str,
                                              state: State) -> None:
    """delay_seconds records how far ahead ``at`` is and allows at most a year: beyond it the
    SDK refuses, rather than recording a capped (wrong) delay next to the exact due time."""
    far = time.time() + 400 * 86400
    with pytest.raises(baton.InvalidArgumentError, match=r"^at: must be at most 31536000 s") \
            as caught:
        client.enqueue(ns, "email", {}, at=far)
    assert caught.value.field == "at"
    within = client.enqueue(ns, "email", {}, at=time.time() + 300 * 86400)
    assert within.status == "scheduled"


def test_unknown_fields_keep_their_spelling(client: baton.Client, ns: str,
                                            state: State) -> None:
    """enqueue_document and Task.to_document carry unknown fields as written: 1.10 stays 1.10,
    and 1e400 (a float Python reads as inf) is neither refused nor rewritten."""
    task_id = baton.uuid7()
    text = (f'{{"task_id":"{task_id}","namespace":"{ns}","task_type":"t","payload":{{"a":1.10}},'
            '"max_retry":1,"delay_seconds":0,"created_at":1722489600,'
            '"x_price":1.10,"x_huge":1e400,"x_nested":{"n":-0}}')
    assert client.enqueue_document(text).status == "queued"
    entry = state.delivered("t")[task_id]
    assert entry["extra"] == b'{"x_price":1.10,"x_huge":1e400,"x_nested":{"n":-0}}'
    values = [entry[k] for k in ("sid", "id", "payload", "max_retry", "delay_seconds",
                                 "created_at", "execution_timeout", "extra", "attempt")]
    task = baton.task.decode_entry(ns, "t", values)
    assert task.to_document() == text.encode()


def test_duplicate_and_unique_conflict(client: baton.Client, ns: str) -> None:
    first = client.enqueue(ns, "email", {}, task_id="order-42")
    again = client.enqueue(ns, "email", {"other": 1}, task_id="order-42")
    assert (first.status, again.status) == ("queued", "duplicate")
    assert again.state == "queued" and not again.written
    holder = client.enqueue(ns, "email", {}, unique_key="user:7", unique_ttl=60)
    blocked = client.enqueue(ns, "email", {}, unique_key="user:7", unique_ttl=60)
    assert holder.status == "queued"
    assert blocked.status == "unique_conflict"
    assert blocked.holder_id == holder.task_id
    other_key = client.enqueue(ns, "email", {}, unique_key="user:8", unique_ttl=60)
    assert other_key.status == "queued"


def test_enqueue_many_keeps_request_order(client: baton.Client, state: State, ns: str) -> None:
    requests = [TaskRequest(ns, "email" if i % 3 else "sms", {"i": i}) for i in range(600)]
    requests.append(TaskRequest(ns, "email", {}, task_id="dup"))
    requests.append(TaskRequest(ns, "email", {}, task_id="dup"))
    requests.append(TaskRequest(ns, "sms", {}, delay=30))
    results = client.enqueue_many(requests)
    assert len(results) == len(requests)
    delivered = {**state.delivered("email"), **state.delivered("sms")}
    for request, result in zip(requests[:600], results[:600], strict=True):
        assert result.status == "queued"
        assert delivered[result.task_id]["payload"] == \
            json.dumps(request.payload, separators=(",", ":")).encode()
    assert [r.status for r in results[600:]] == ["queued", "duplicate", "scheduled"]
    assert client.enqueue_many([]) == []


def test_enqueue_many_validates_everything_first(client: baton.Client, r: redis.Redis,
                                                 ns: str) -> None:
    requests = [TaskRequest(ns, "email", {}), TaskRequest(ns, "email", {}, max_retry=99)]
    with pytest.raises(baton.InvalidArgumentError) as e:
        client.enqueue_many(requests)
    assert str(e.value) == "requests[1]: max_retry: must be an integer 0..25 (got 99)"
    assert e.value.field == "max_retry"
    assert r.dbsize() == 0


@pytest.mark.parametrize("kwargs,message", [
    ({"namespace": "a:b"}, "namespace: must be a string matching"),
    ({"task_type": ""}, "task_type: must be a string matching"),
    ({"payload": [1, 2]}, "payload: must be a JSON object (got array)"),
    ({"payload": b'{"a":}'}, "payload: not valid JSON"),
    ({"payload": {"t": float("nan")}}, "payload: not JSON-serializable"),
    ({"payload": {"when": datetime.now()}}, "payload: not JSON-serializable"),
    ({"max_retry": True}, "max_retry: must be an integer 0..25 (got true)"),
    ({"max_retry": 26}, "max_retry: must be an integer 0..25 (got 26)"),
    ({"delay": -5}, "delay (delay_seconds): must be an integer 0..31536000 (got -5)"),
    ({"delay": 1.5}, "delay (delay_seconds): must be an integer 0..31536000: whole seconds"),
    ({"delay": "5"}, "delay (delay_seconds): must be an integer 0..31536000 (got \"5\")"),
    ({"at": 1722489600000}, "at: must be Unix seconds 946684800..4102444800 "
                            "(got 1722489600000: milliseconds?)"),
    ({"at": 1722489600, "delay": 5}, "at: cannot be combined with delay"),
    ({"at": datetime(2030, 1, 1)}, "at: must be a timezone-aware datetime"),
    ({"execution_timeout": 0}, "execution_timeout: must be an integer 1..86400 (got 0)"),
    ({"task_id": "a b"}, "task_id: must be a string matching"),
    ({"unique_key": "k"}, "unique_ttl: must be at least 1 second when unique_key is set"),
    ({"unique_key": "k", "unique_ttl": 0}, "unique_ttl: must be at least 1 second"),
    ({"unique_ttl": 5}, "unique_ttl: needs unique_key"),
    ({"extra": {"max_retry": 1}}, 'extra: must not contain the contract field "max_retry"'),
    ({"extra": {"trace": {"baggage": "x"}}}, 'extra.trace: unknown field "baggage"'),
    ({"extra": {"trace": []}}, "extra.trace: must be a JSON object (got array)"),
    ({"extra": {"trace": {"traceparent": 1}}}, "extra.trace.traceparent: must be a string"),
    ({"extra": {"headers": {"n": 1}}}, "extra.headers.n: must be a string of at most 1024"),
    ({"extra": {"headers": []}}, "extra.headers: must be a JSON object (got array)"),
    ({"extra": {"x": float("nan")}}, "extra: not JSON-serializable"),
])
def test_bad_arguments_name_field_and_rule(client: baton.Client, r: redis.Redis, ns: str,
                                           kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"namespace": ns, "task_type": "email", "payload": {}}
    args.update(kwargs)
    with pytest.raises(baton.InvalidArgumentError) as e:
        client.enqueue(**args)  # type: ignore[arg-type]
    assert str(e.value).startswith(message), str(e.value)
    assert e.value.code == "invalid_argument"
    assert e.value.field == message.partition(":")[0].partition(" ")[0]  # the argument
    assert r.dbsize() == 0


def test_cancel_and_configure(client: baton.Client, state: State, ns: str) -> None:
    task = client.enqueue(ns, "email", {}, delay=60)
    client.cancel(ns, task.task_id)
    assert state.state(task.task_id) == "cancelled"
    with pytest.raises(baton.NotFoundError):
        client.cancel(ns, task.task_id)
    assert client.configure(ns)["lease_ms"] == 30000
    assert client.configure(ns, lease_ms=5000, dlq_max=10)["lease_ms"] == 5000
    assert client.configure(ns, lease_ms=None)["lease_ms"] == 30000
    with pytest.raises(baton.InvalidArgumentError, match="lease_ms: must be an integer"):
        client.configure(ns, lease_ms=5)
    with pytest.raises(baton.InvalidArgumentError, match=r"^bogus: is not a setting"):
        client.configure(ns, bogus=1)


def test_version_mismatch_says_run_baton_init(server: RedisServer, r: redis.Redis,
                                              ns: str) -> None:
    r.execute_command("FUNCTION", "DELETE", "baton_v2")
    try:
        with baton.Client(server.url) as c, pytest.raises(baton.VersionMismatchError) as e:
            c.enqueue(ns, "email", {})
        assert "functions library version none loaded in Redis, this client needs 2" in str(e.value)
        assert "baton init" in str(e.value)
    finally:
        server.load_functions()


def test_unreachable_redis_is_unavailable(ns: str) -> None:
    with baton.Client(f"redis://127.0.0.1:{free_port()}") as c, \
            pytest.raises(baton.UnavailableError) as e:
        c.enqueue(ns, "email", {})
    assert e.value.retryable


def test_async_client(url: str, state: State, ns: str, r: redis.Redis) -> None:
    async def main() -> None:
        async with baton.AsyncClient(url) as c:
            assert await c.library_version() == "2"
            one = await c.enqueue(ns, "email", b'{"x":1.10}', task_id="a1")
            again = await c.enqueue(ns, "email", {}, task_id="a1")
            later = await c.enqueue(ns, "email", {}, delay=30)
            many = await c.enqueue_many([TaskRequest(ns, "sms", {"i": i}) for i in range(3)])
            assert (one.status, again.status, later.status) == ("queued", "duplicate",
                                                                 "scheduled")
            assert [m.status for m in many] == ["queued"] * 3
            assert state.delivered("email")["a1"]["payload"] == b'{"x":1.10}'
            with pytest.raises(baton.InvalidArgumentError, match=r"^max_retry: "):
                await c.enqueue(ns, "email", {}, max_retry=-1)
            await c.cancel(ns, later.task_id)
            assert state.state(later.task_id) == "cancelled"
            assert (await c.configure(ns))["dlq_max"] == 100000

    asyncio.run(main())


def test_argument_errors_in_enqueue_many_and_documents(client: baton.Client, ns: str,
                                                       r: redis.Redis) -> None:
    """enqueue_many prefixes the request index to the argument's name; a task document names
    trace and headers as what they are there, its top-level fields."""
    with pytest.raises(baton.InvalidArgumentError) as many:
        client.enqueue_many([TaskRequest(ns, "t", {}), TaskRequest(ns, "t", {}, delay=-1)])
    assert str(many.value) == ("requests[1]: delay (delay_seconds): must be an integer "
                               "0..31536000 (got -1)")
    assert many.value.field == "delay"
    text = (f'{{"task_id":"a1","namespace":"{ns}","task_type":"t","payload":{{}},"max_retry":1,'
            '"delay_seconds":0,"created_at":1722489600,"trace":{"baggage":"x"}}')
    with pytest.raises(baton.InvalidArgumentError, match=r'^trace: unknown field "baggage"') \
            as doc:
        client.enqueue_document(text)
    assert doc.value.field == "trace"
    assert r.dbsize() == 0
