"""The engines' JSON decoder (kernelindex.db.engine.decode_json) gives what json.loads gives, including
for a number msgspec declines (a JSONB numeric beyond a double)."""

from __future__ import annotations

import json
import math

import pytest

from kernelindex.db.engine import decode_json


@pytest.mark.parametrize("text", [
    '{"batch_size": 8, "dim": 4096}', '{"passed": true, "max_abs_diff": 1.5e-07, "atol": 0.01}',
    '{"big": 123456789012345678901234567890}', '[1, 2.5, "x", null, false, -0.0, 1E2]', '"héllo \\u2603"', '{}', "[]",
])
def test_decodes_as_json_loads_does(text):
    got, want = decode_json(text), json.loads(text)
    assert got == want and json.dumps(got) == json.dumps(want)  # same values, and the same types (1E2 is a float)


def test_a_number_beyond_a_double_is_read_as_json_loads_reads_it():
    assert decode_json('{"x": 1e400}') == {"x": math.inf}
