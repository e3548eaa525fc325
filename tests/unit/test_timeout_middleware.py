"""TimeoutMiddleware: a request without a response start by the limit gets 504 and its handler is
cancelled; a response already started finishes; a cancellation from outside stays a cancellation."""

from __future__ import annotations

import asyncio
import json

import pytest

from kernelindex.graphql.request_state import SCOPE_KEY, RequestState
from kernelindex.web.http import TimeoutMiddleware


def scope(path: str = "/graphql") -> dict:
    state = {SCOPE_KEY: RequestState(request_id="req-timeout-1")}
    return {"type": "http", "method": "POST", "path": path, "headers": [], "state": state}


async def call(app, path: str = "/graphql") -> list[dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await app(scope(path), receive, send)
    return sent


async def test_a_handler_past_the_limit_is_cancelled_and_answered_504():
    cancelled = asyncio.Event()

    async def slow(scope, receive, send):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    sent = await asyncio.wait_for(call(TimeoutMiddleware(slow, timeout_s=0.05)), timeout=5)
    assert cancelled.is_set()
    assert sent[0]["status"] == 504
    assert (b"x-request-id", b"req-timeout-1") in sent[0]["headers"]
    body = json.loads(sent[1]["body"])
    assert body == {
        "error": "the request took longer than 0.05 s", "request_id": "req-timeout-1",
        "errors": [{"message": "the request took longer than 0.05 s", "extensions": {"code": "TIMEOUT", "request_id": "req-timeout-1"}}],
    }
    # The task's cancellation was ours and is undone: the task can go on awaiting.
    assert asyncio.current_task().cancelling() == 0
    await asyncio.sleep(0)


async def test_a_handler_that_swallows_the_cancellation_still_gets_504():
    async def stubborn(scope, receive, send):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass

    sent = await asyncio.wait_for(call(TimeoutMiddleware(stubborn, timeout_s=0.05)), timeout=5)
    assert [m.get("status") for m in sent][:1] == [504]
    assert asyncio.current_task().cancelling() == 0


async def test_a_started_response_is_let_finish():
    async def streams(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(0.15)
        await send({"type": "http.response.body", "body": b"done"})

    sent = await call(TimeoutMiddleware(streams, timeout_s=0.05))
    assert sent[0]["status"] == 200 and sent[-1]["body"] == b"done"


async def test_a_fast_handler_is_untouched_and_its_timer_cancelled():
    async def fast(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sent = await call(TimeoutMiddleware(fast, timeout_s=0.05))
    assert [m.get("status") for m in sent] == [200, None]
    await asyncio.sleep(0.1)  # a timer left behind would cancel this test's task here
    assert asyncio.current_task().cancelling() == 0


async def test_exempt_paths_have_no_limit():
    async def slow_export(scope, receive, send):
        await asyncio.sleep(0.1)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"csv"})

    sent = await call(TimeoutMiddleware(slow_export, timeout_s=0.02), path="/exports/runs.csv")
    assert sent[0]["status"] == 200


async def test_a_cancellation_from_outside_is_not_turned_into_a_504():
    entered = asyncio.Event()

    async def waits(scope, receive, send):
        entered.set()
        await asyncio.sleep(10)

    sent: list[dict] = []

    async def run():
        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            sent.append(message)

        await TimeoutMiddleware(waits, timeout_s=5)(scope(), receive, send)

    task = asyncio.ensure_future(run())
    await entered.wait()
    task.cancel()  # the client went away
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sent == []
