"""Schemathesis hooks for fuzzing the GraphQL API (`SCHEMATHESIS_HOOKS=tests/reliability/fuzz_hooks.py`).

- A strategy for the JSON scalar (submitRuns records): run records from seeds/runs.jsonl with one part
  replaced, dropped or mangled, and arbitrary JSON.
- The check `no_internal_error`: a response fails when its status is 5xx, when it is not JSON, or
  when any GraphQL error is an internal one (extensions.code INTERNAL_SERVER_ERROR, or the masked
  message 'Unexpected error.'). Refusals the client caused (validation, BAD_USER_INPUT,
  UNAUTHENTICATED, FORBIDDEN) are the API working as documented and pass.

Used by tests/reliability/test_schema_fuzz.py (short, in CI) and perf/fuzz_graphql.py (long).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import graphql
import schemathesis
from hypothesis import strategies as st
from schemathesis.graphql import nodes

SEED_RUNS = Path(__file__).resolve().parents[2] / "seeds" / "runs.jsonl"
INTERNAL_CODES = frozenset({"INTERNAL_SERVER_ERROR"})
INTERNAL_MESSAGE = "Unexpected error."
_NAME = re.compile(r"\A[_A-Za-z][_0-9A-Za-z]*\Z")


def value_node(value) -> graphql.ValueNode:
    """A GraphQL literal for a JSON value (object keys must be GraphQL names)."""
    if value is None:
        return graphql.NullValueNode()
    if isinstance(value, bool):
        return nodes.Boolean(value)
    if isinstance(value, int):
        return nodes.Int(value)
    if isinstance(value, float):
        return nodes.Float(value) if math.isfinite(value) else graphql.NullValueNode()
    if isinstance(value, str):
        return nodes.String(value)
    if isinstance(value, list):
        return nodes.List([value_node(v) for v in value])
    fields = [
        graphql.ObjectFieldNode(name=graphql.NameNode(value=k), value=value_node(v))
        for k, v in value.items()
        if _NAME.match(k)
    ]
    return nodes.Object(fields)


names = st.from_regex(_NAME, fullmatch=True).filter(lambda s: len(s) <= 20)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30),
)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
                           max_leaves=12)


def _seed_records() -> list[dict]:
    return [json.loads(line) for line in SEED_RUNS.read_text().splitlines() if line.strip()]


@st.composite
def mangled_records(draw) -> dict:
    """A seed run record with one field (top-level or one level down) replaced, dropped or left alone."""
    record = json.loads(json.dumps(draw(st.sampled_from(_seed_records()))))
    section = draw(st.sampled_from(sorted(record)))
    target, key = record, section
    if isinstance(record[section], dict) and record[section] and draw(st.booleans()):
        target, key = record[section], draw(st.sampled_from(sorted(record[section])))
    action = draw(st.sampled_from(["replace", "drop", "keep"]))
    if action == "replace":
        target[key] = draw(json_values)
    elif action == "drop":
        del target[key]
    return record


schemathesis.graphql.scalar("JSON", st.one_of(mangled_records(), json_values).map(value_node))


def internal_errors(status: int, body: bytes) -> list[str]:
    """What makes this response an internal failure; empty when it is not one."""
    problems = []
    if status >= 500:
        problems.append(f"HTTP {status}: {body[:300]!r}")
    try:
        payload = json.loads(body)
    except ValueError:
        return problems + [f"HTTP {status}: not JSON: {body[:300]!r}"]
    errors = payload.get("errors") if isinstance(payload, dict) else None
    for error in errors or []:
        code = (error.get("extensions") or {}).get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        if code in INTERNAL_CODES or message == INTERNAL_MESSAGE:
            problems.append(f"{code}: {str(message)[:300]}")
    return problems


@schemathesis.check
def no_internal_error(ctx, response, case):
    """No 5xx, no INTERNAL_SERVER_ERROR, no 'Unexpected error.'."""
    problems = internal_errors(response.status_code, response.content)
    if problems:
        raise AssertionError("; ".join(problems))
