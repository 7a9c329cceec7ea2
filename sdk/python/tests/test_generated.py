"""The generated wrappers and error classes follow contract/protocol.json and errors.json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import redis

import baton
from baton import _generated as gen
from baton.errors import LibraryVersionError, translate
from baton.keys import Keyspace
from harness import ROOT, SDK

PROTOCOL = json.loads((ROOT / "contract" / "protocol.json").read_text())
ERRORS = json.loads((ROOT / "contract" / "errors.json").read_text())


def test_generated_file_is_fresh() -> None:
    done = subprocess.run([sys.executable, str(SDK / "scripts" / "gen_protocol.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", list(PROTOCOL["functions"]))
def test_builder_puts_keys_and_argv_in_contract_order(name: str) -> None:
    spec = PROTOCOL["functions"][name]
    builder = getattr(gen, name.removeprefix(PROTOCOL["library"] + "_"))
    keys = {kind: f"<{kind}>" for kind in spec["keys"]}
    argv = [f"<{a}>" for a in spec["argv"]]
    per_item = spec.get("per_item", [])
    kwargs = {}
    if per_item:
        kwargs["items"] = [[f"<{a}1>" for a in per_item], [f"<{a}2>" for a in per_item]]
    call = builder(keys, *argv, **kwargs) if spec["keys"] else builder(*argv, **kwargs)
    assert call.function == name
    assert call.keys == [f"<{k}>" for k in spec["keys"]]
    expected = argv + [f"<{a}{i}>" for i in (1, 2) for a in per_item]
    assert call.args == expected
    assert call.read_only == bool(spec.get("read_only"))


def test_key_patterns_follow_the_keyspace() -> None:
    ks = Keyspace("shop")
    keys = ks.for_type("email")
    for kind, spec in PROTOCOL["key_kinds"].items():
        if kind == "unique":
            assert ks.unique("k1") == "baton:v2:{shop}:unique:k1"
            continue
        expected = spec["pattern"].replace("{NS}", "{shop}").replace(":TYPE", ":email")
        assert keys[kind] == expected
    assert keys["cron_state"] == PROTOCOL["global_keys"]["cron_state"]


def test_every_error_code_has_a_class() -> None:
    assert set(gen.ERRORS_BY_CODE) == {c["code"] for c in ERRORS["codes"]}
    for c in ERRORS["codes"]:
        cls = gen.ERRORS_BY_CODE[c["code"]]
        assert issubclass(cls, baton.BatonError)
        assert cls.code == c["code"]
        assert cls.retryable == c["retryable"]
    assert issubclass(baton.InvalidArgumentError, ValueError)


@pytest.mark.parametrize("reply,cls,field", [
    ("BATON_INVALID max_retry (task 2): must be an integer 0..25", baton.InvalidArgumentError,
     "max_retry (task 2)"),
    ("BATON_NOT_FOUND no task x", baton.NotFoundError, None),
    ("BATON_CONFLICT task x is active", baton.ConflictError, None),
    ("BUSY Redis is busy running a script", baton.UnavailableError, None),
])
def test_error_replies_map_to_codes(reply: str, cls: type[baton.BatonError],
                                    field: str | None) -> None:
    error = translate(redis.exceptions.ResponseError(reply))
    assert type(error) is cls
    assert error.field == field
    if cls is baton.InvalidArgumentError:
        assert error.message == reply.split(" ", 1)[1]


def test_redis_own_errors_map_with_hints() -> None:
    oom = translate(redis.exceptions.OutOfMemoryError("command not allowed"))
    assert isinstance(oom, baton.ResourceExhaustedError) and oom.retryable
    assert "maxmemory" in str(oom)
    missing = translate(redis.exceptions.ResponseError("Function not found"))
    assert isinstance(missing, baton.VersionMismatchError)
    assert "baton init" in str(missing)
    down = translate(redis.exceptions.ConnectionError("refused"))
    assert isinstance(down, baton.UnavailableError) and down.retryable
    assert isinstance(translate(LibraryVersionError("x")), baton.VersionMismatchError)
