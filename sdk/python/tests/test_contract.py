"""contract/fixtures: every task document is accepted or refused exactly as the fixture says, by
the SDK's parser and by enqueue (against Redis), and a refusal names the field and the rule."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
import redis

import baton
from baton import _jsonspan, contract
from baton.keys import Keyspace
from harness import FIXTURES, State

# The task document fixtures; the other fixture files have their own tests (partitions.json:
# test_partitions.py).
OTHER_FIXTURES = {"partitions.json"}
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*.json") if p.name not in OTHER_FIXTURES)


def document_text(path: pathlib.Path) -> tuple[dict[str, Any], bytes]:
    """The fixture and its document text, as contract/fixtures/README.md says to take it."""
    raw = path.read_bytes()
    fixture = json.loads(raw)
    if "document_text" in fixture:
        return fixture, fixture["document_text"].encode("utf-8")
    if "payload_repeat" in fixture:
        repeat = fixture["payload_repeat"]
        document = fixture["document"]
        document["payload"][repeat["key"]] = repeat["char"] * repeat["count"]
        return fixture, json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    text = _jsonspan.member_text(raw, "document")  # the exact bytes, numbers as written
    assert text is not None
    return fixture, text


def test_every_fixture_is_covered() -> None:
    assert len(FIXTURE_FILES) >= 60
    assert {p.name.split("_")[0] for p in FIXTURE_FILES} == {"valid", "invalid"}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_parser_follows_fixture(path: pathlib.Path) -> None:
    fixture, text = document_text(path)
    if fixture["valid"]:
        doc = contract.parse_task_document(text)
        assert isinstance(doc, contract.TaskDocument)
        # The payload bytes are the document's, spelled as written.
        assert doc.payload == _jsonspan.member_text(text, "payload")
        assert json.loads(doc.payload) == json.loads(text)["payload"]
        return
    with pytest.raises(baton.InvalidArgumentError) as e:
        contract.parse_task_document(text)
    field = fixture["error"]["field"]
    assert fixture["error"]["code"] == e.value.code == "invalid_argument"
    assert str(e.value).startswith(field + ": "), str(e.value)
    assert len(str(e.value)) > len(field) + 2  # a rule follows the field
    assert e.value.field == field


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_enqueue_follows_fixture(path: pathlib.Path, client: baton.Client,
                                 r: redis.Redis) -> None:
    """enqueue_document: a valid document is written exactly (payload bytes, extra fields), an
    invalid one is refused naming the field and nothing is written."""
    fixture, text = document_text(path)
    if not fixture["valid"]:
        with pytest.raises(baton.InvalidArgumentError) as e:
            client.enqueue_document(text)
        assert str(e.value).startswith(fixture["error"]["field"] + ": "), str(e.value)
        assert r.dbsize() == 0
        return
    doc = contract.parse_task_document(text)
    result = client.enqueue_document(text)
    assert result.status in ("queued", "scheduled")
    assert result.task_id == doc.task_id
    ks = Keyspace(doc.namespace)
    if result.status == "queued":
        fields = State(r, doc.namespace).delivered(doc.task_type)[doc.task_id]
        assert fields["payload"] == doc.payload
        assert int(fields["created_at"]) == doc.created_at
        assert int(fields["max_retry"]) == doc.max_retry
        extra = json.loads(fields["extra"]) if fields["extra"] else {}
    else:
        body = json.loads(r.hget(ks.of("bodies"), doc.task_id))
        assert body["payload"].encode() == doc.payload
        extra = json.loads(body["extra"]) if body["extra"] else {}
    assert extra == doc.extra  # unknown fields travel untouched


def test_unknown_fields_are_kept() -> None:
    _, text = document_text(FIXTURES / "valid_unknown_fields_kept.json")
    doc = contract.parse_task_document(text)
    assert doc.extra  # the fixture has fields the contract does not know
    assert not set(doc.extra) & set(contract.TASK_FIELDS)


def test_exotic_payload_numbers_keep_their_spelling() -> None:
    _, text = document_text(FIXTURES / "valid_payload_exotic_numbers.json")
    doc = contract.parse_task_document(text)
    assert b"123456789012345678901234567890" in doc.payload
    assert b"1.10" in doc.payload


@pytest.mark.parametrize("text,message", [
    (b'{"a":NaN}', "payload: not valid JSON: NaN is not valid JSON"),
    (b"[1]", "payload: must be a JSON object (got array)"),
    (b'{"a":1} x', "payload: not valid JSON: Extra data"),
])
def test_raw_payload_rules(text: bytes, message: str) -> None:
    with pytest.raises(baton.InvalidArgumentError) as e:
        contract.payload_text(text)
    assert str(e.value).startswith(message)


def test_payload_limit_counts_serialized_bytes() -> None:
    at_limit = b'{"b":"' + b"x" * (contract.PAYLOAD_MAX_BYTES - 8) + b'"}'
    assert contract.payload_text(at_limit) == at_limit
    with pytest.raises(baton.InvalidArgumentError, match=r"^payload: must be at most 524288"):
        contract.payload_text(at_limit[:-2] + b'x"}')
