"""What is wrong with an API response, as a success, as an outage answer (a proper 503) or as the
export limiter's busy answer: the predicates that perf.outage_check counts with and
tests/reliability/test_outage.py and test_web_bounds.py assert with."""

from __future__ import annotations

import httpx

from kernelindex.graphql.errors import UNAVAILABLE_MESSAGE
from kernelindex.web.exports import EXPORTS_BUSY


def unavailable_problem(kind: str, response: httpx.Response, *, single: bool = True) -> str | None:
    """What is wrong with this response as an outage answer; None when it is a proper 503.
    `single=False` accepts several SERVICE_UNAVAILABLE errors: a GraphQL request cut off mid-flight
    reports each field that lost the connection."""
    if response.status_code != 503:
        return f"status {response.status_code}: {response.text[:200]}"
    try:
        body = response.json()
    except ValueError:
        return f"not JSON: {response.text[:200]}"
    if kind.startswith("graphql"):
        errors = body.get("errors") or []
        codes = [(e.get("extensions") or {}).get("code") for e in errors]
        if not codes or set(codes) != {"SERVICE_UNAVAILABLE"} or (single and len(codes) != 1):
            return f"errors {errors}"
        if any(e["message"] != UNAVAILABLE_MESSAGE or not e["extensions"].get("request_id") for e in errors):
            return f"message {errors}"
    elif kind == "healthz":
        if body.get("status") != "unavailable":
            return f"body {body}"
    elif body.get("error") != UNAVAILABLE_MESSAGE or not body.get("request_id"):
        return f"body {body}"
    return None


def busy_problem(response: httpx.Response) -> str | None:
    """What is wrong with this response as the export limiter's answer (every export slot taken:
    kernelindex.web.exports); None when it is one: a 503 at once, with Retry-After, a JSON error that
    says so and the request's id. Load shed while the service works, not an outage: a drill counts it
    apart from both."""
    if response.status_code != 503:
        return f"status {response.status_code}"
    if not response.headers.get("retry-after", "").isdigit():
        return f"no Retry-After: {dict(response.headers)}"
    try:
        body = response.json()
    except ValueError:
        return f"not JSON: {response.text[:200]}"
    if not str(body.get("error", "")).startswith(EXPORTS_BUSY) or not body.get("request_id"):
        return f"body {body}"
    return None


def ok_problem(kind: str, response: httpx.Response) -> str | None:
    """What is wrong with this response as a success; None when it is one."""
    if response.status_code != 200:
        return f"status {response.status_code}: {response.text[:200]}"
    if kind.startswith("graphql"):
        try:
            body = response.json()
        except ValueError:
            return f"not JSON: {response.text[:200]}"
        if body.get("errors"):
            return f"errors {body['errors']}"
    return None
