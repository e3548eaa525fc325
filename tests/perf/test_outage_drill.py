"""perf.outage_check's counting: a success, the export limiter's busy answer (load shed, counted
apart), a proper outage 503, or a failure. Until the busy answer had a column of its own, a drill
with more runs.csv clients than export slots counted it as an improper 503 and as a failure after
recovery, and failed about one run in two on a 2-core machine."""

from __future__ import annotations

import httpx

from kernelindex.graphql.errors import UNAVAILABLE_MESSAGE
from perf.outage_check import classify

BUSY = {"error": "too many exports running (at most 4 at once); retry in 5 s", "request_id": "r1"}
OUTAGE = {"error": UNAVAILABLE_MESSAGE, "request_id": "r2"}


def outcome(kind: str, status: int, body: dict | None = None, headers: dict | None = None, text: str = ""):
    response = httpx.Response(status, json=body, headers=headers) if body is not None else httpx.Response(status, text=text)
    return classify(kind, 1.0, 2.0, response)


def test_a_success_is_ok():
    o = outcome("runs.csv", 200, text="a,b\n1,2\n")
    assert (o.ok, o.proper_503, o.busy, o.problem) == (True, False, False, None)


def test_the_export_limiters_answer_is_busy_neither_a_failure_nor_an_outage_answer():
    o = outcome("runs.csv", 503, BUSY, {"retry-after": "5"})
    assert (o.ok, o.proper_503, o.busy, o.problem) == (False, False, True, None)


def test_an_outage_503_of_an_export_is_a_proper_503_not_busy():
    o = outcome("runs.csv", 503, OUTAGE)
    assert (o.ok, o.proper_503, o.busy, o.problem) == (False, True, False, None)


def test_a_busy_answer_without_retry_after_or_its_request_id_is_a_failure():
    for body, headers in ((BUSY, {}), ({"error": BUSY["error"]}, {"retry-after": "5"}), (BUSY, {"retry-after": "soon"})):
        o = outcome("runs.csv", 503, body, headers)
        assert not o.ok and not o.busy and not o.proper_503 and o.problem, (body, headers)


def test_only_an_export_can_be_busy():
    # The limiter guards the export routes only: the same body on GraphQL is something else.
    o = outcome("graphql runs", 503, BUSY, {"retry-after": "5"})
    assert not o.busy and not o.proper_503 and o.problem
