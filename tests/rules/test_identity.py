"""Canonical JSON and the identities built on it."""

from __future__ import annotations

import json
import math

import pytest

from kernelindex.rules.identity import (
    canonical_json,
    configuration_key,
    digest,
    is_finite_number,
    sha256_hex,
    short_digest,
    workload_identity,
)
from tests.rules.factories import RESNET18, seed_workloads

SEMANTICS = seed_workloads()[RESNET18]["semantics"]
SOURCE = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n"


def _reorder(value):
    """The same value with every dict's keys reversed."""
    if isinstance(value, dict):
        return {k: _reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder(v) for v in value]
    return value


def test_canonical_json_ignores_key_order():
    a = {"b": 1, "a": {"y": [1, 2], "x": None}}
    b = {"a": {"x": None, "y": [1, 2]}, "b": 1}
    assert canonical_json(a) == canonical_json(b) == '{"a":{"x":null,"y":[1,2]},"b":1}'


def test_canonical_json_ignores_input_whitespace():
    compact = json.loads('{"a":1,"b":[1,2,{"c":"d e"}]}')
    spaced = json.loads('{\n  "b" : [ 1 ,2, { "c" : "d e" } ],\n\t"a":   1\n}')
    assert canonical_json(compact) == canonical_json(spaced)
    assert " " not in canonical_json(compact).replace("d e", "")


def test_canonical_json_keeps_list_order_and_unicode():
    assert canonical_json([2, 1]) != canonical_json([1, 2])
    assert canonical_json({"unit": "µs"}) == '{"unit":"µs"}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"x": [float("nan")]}])
def test_canonical_json_refuses_nan_and_infinities(bad):
    with pytest.raises(ValueError):
        canonical_json(bad)


def test_digest_is_sha256_of_canonical_json():
    assert sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex(b"abc") == sha256_hex("abc")
    assert digest({"b": 1, "a": 2}) == sha256_hex('{"a":2,"b":1}')


def test_workload_identity_is_stable_under_key_reordering():
    reordered = _reorder(SEMANTICS)
    assert list(reordered) != list(SEMANTICS)
    ident = workload_identity(SEMANTICS, SOURCE)
    assert workload_identity(reordered, SOURCE) == ident
    assert len(ident) == 64 and all(c in "0123456789abcdef" for c in ident)


def test_workload_identity_changes_with_one_character_of_source():
    assert workload_identity(SEMANTICS, SOURCE) != workload_identity(SEMANTICS, SOURCE.replace("pass", "Pass"))
    assert workload_identity(SEMANTICS, SOURCE) != workload_identity(SEMANTICS, SOURCE + " ")


def test_workload_identity_changes_with_semantics():
    assert workload_identity(SEMANTICS, SOURCE) != workload_identity(SEMANTICS | {"determinism": "deterministic"}, SOURCE)
    assert workload_identity(SEMANTICS, SOURCE) != workload_identity(None, SOURCE)


def test_configuration_key_equality():
    assert configuration_key({"m": 4, "n": 8}, "fp32") == configuration_key({"n": 8, "m": 4}, "fp32")
    assert configuration_key({"batch_size": 2}, "fp32") == configuration_key({"batch_size": 2.0}, "fp32")
    assert configuration_key({"batch_size": 2}, "fp32") == '{"bindings":{"batch_size":2},"dtype":"fp32"}'


def test_configuration_key_differs_by_binding_or_dtype():
    base = configuration_key({"batch_size": 2}, "fp32")
    assert configuration_key({"batch_size": 3}, "fp32") != base
    assert configuration_key({"batch_size": 2}, "fp16") != base
    assert configuration_key({"batch": 2}, "fp32") != base
    assert configuration_key({}, "fp32") != base


def test_short_digest():
    assert short_digest("245e5928b637" + "0" * 52) == "245e5928b637…"
    assert short_digest("abcdef", 3) == "abc…"


@pytest.mark.parametrize("value, ok", [(1, True), (1.5, True), (math.nan, False), (math.inf, False), (True, False), ("1", False), (None, False)])
def test_is_finite_number(value, ok):
    assert is_finite_number(value) is ok
