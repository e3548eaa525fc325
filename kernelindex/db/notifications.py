"""What the database tells as it happens: a fleet job's state changes and a workload's new record
events, heard over LISTEN on one connection per server process and handed to the subscriptions of
that process.

Migration 0020's triggers pg_notify the two channels whichever process writes (a fleet worker, a
mutation on another server process, `kernelindex ingest`), when the writing transaction commits. A
notification only wakes a subscription: the subscription re-reads what it shows through the same
services the queries use, so what it sends is committed data, read and checked as a query reads it.

Each subscription has a bounded queue. A subscriber that cannot keep up (its client reads slower than
the notifications come) is not given a longer queue and is not silently thinned out: once its queue
is full it is closed, and its next wait raises SubscriptionOverflow, which the client receives as an
error naming the limit (it may subscribe again and start from the state then). When the listening
connection is lost, every subscriber is woken once it is back (RESYNC): a notification sent while
nobody listened is gone, and the re-read finds what it said.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from kernelindex.db.urls import to_libpq_url

log = logging.getLogger("kernelindex.web")

JOBS_CHANNEL = "kernelindex_jobs"
RECORD_EVENTS_CHANNEL = "kernelindex_record_events"
CHANNELS = (JOBS_CHANNEL, RECORD_EVENTS_CHANNEL)

# A dead listening connection (a half-open TCP connection says nothing) is found by a round trip this often.
CHECK_EVERY_S = 10.0
RETRY_AFTER_S = 1.0
# How the listening connection names itself in pg_stat_activity.
APPLICATION_NAME = "kernelindex-notifications"


@dataclass(frozen=True)
class Notice:
    """One notification (its channel and JSON payload), or RESYNC: anything may have changed."""

    channel: str
    payload: dict[str, Any] = field(default_factory=dict)
    resync: bool = False


RESYNC = Notice(channel="", resync=True)


class SubscriptionOverflow(Exception):
    """The subscriber fell more than its queue's bound behind; it is closed."""

    def __init__(self, size: int):
        super().__init__(f"the subscription fell {size} notifications behind (the per-subscription bound) and was "
                         "closed: read faster, or subscribe again to start from the current state")
        self.size = size


class Subscriber:
    """What one subscription waits on: the notices of its channel its filter accepts, and RESYNCs."""

    def __init__(self, channel: str, accepts: Callable[[dict[str, Any]], bool], size: int):
        self.channel = channel
        self.accepts = accepts
        self.queue: asyncio.Queue[Notice] = asyncio.Queue(maxsize=size)
        self.overflowed = False

    def offer(self, notice: Notice) -> None:
        if self.overflowed:
            return
        if not notice.resync and (notice.channel != self.channel or not self.accepts(notice.payload)):
            return
        try:
            self.queue.put_nowait(notice)
        except asyncio.QueueFull:
            self.overflowed = True
            # Wake the waiter, which then raises: an overflowed subscriber is ended, not left waiting.
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.queue.put_nowait(RESYNC)

    async def next(self) -> Notice:
        """The next notice, and with it every other one waiting (a notice only wakes: the re-read that
        follows covers them all, so a burst while the subscription was busy costs one re-read, not one
        each, and does not count against the bound again); SubscriptionOverflow once the queue has
        overflowed."""
        if self.overflowed:
            raise SubscriptionOverflow(self.queue.maxsize)
        notice = await self.queue.get()
        while not self.queue.empty():
            waiting = self.queue.get_nowait()
            notice = waiting if waiting.resync else notice
        if self.overflowed:
            raise SubscriptionOverflow(self.queue.maxsize)
        return notice


class Notifications:
    """The process's listening connection (kept open, reconnected when lost) and its subscribers."""

    def __init__(self, url: str, *, queue_size: int, check_every_s: float = CHECK_EVERY_S,
                 retry_after_s: float = RETRY_AFTER_S):
        self.url = to_libpq_url(url)
        self.queue_size = queue_size
        self.check_every_s = check_every_s
        self.retry_after_s = retry_after_s
        self.subscribers: set[Subscriber] = set()
        self.listening = asyncio.Event()  # set while LISTEN holds
        self.received = 0  # notifications heard, for tests and /metrics
        self.overflows = 0  # subscribers ended for falling behind
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="kernelindex-notifications")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._closing = True
        # Cancelled again until it ends: in Python 3.11 asyncio.wait_for can swallow a cancellation that arrives as
        # its inner wait completes (fixed in 3.12), and the loop then went on checking the connection every
        # CHECK_EVERY_S while close() waited forever (a CI run hung in an app's shutdown). _closing stops the
        # loop at its next turn whatever happened to the cancellation.
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
        with contextlib.suppress(asyncio.CancelledError):
            task.result()

    @contextlib.contextmanager
    def subscribe(self, channel: str, accepts: Callable[[dict[str, Any]], bool]) -> Iterator[Subscriber]:
        """A subscriber for the block's length: subscribe before reading the current state, so that no
        change committed between that read and the first wait is missed."""
        subscriber = Subscriber(channel, accepts, self.queue_size)
        self.subscribers.add(subscriber)
        try:
            yield subscriber
        finally:
            self.subscribers.discard(subscriber)

    def publish(self, notice: Notice) -> None:
        for subscriber in list(self.subscribers):
            behind = subscriber.overflowed
            subscriber.offer(notice)
            if subscriber.overflowed and not behind:
                self.overflows += 1

    def _heard(self, connection: Any, pid: int, channel: str, payload: object) -> None:
        self.received += 1
        try:
            data = json.loads(str(payload))
        except ValueError:
            log.warning("notification on %s is not JSON: %.200r", channel, payload)
            return
        self.publish(Notice(channel=channel, payload=data if isinstance(data, dict) else {}))

    async def _run(self) -> None:
        first = True
        while not self._closing:
            lost = asyncio.Event()
            connection = None
            try:
                connection = await asyncpg.connect(self.url, timeout=10, server_settings={"application_name": APPLICATION_NAME})
                connection.add_termination_listener(lambda _c, lost=lost: lost.set())
                for channel in CHANNELS:
                    await connection.add_listener(channel, self._heard)
                self.listening.set()
                if not first:
                    log.warning("listening for notifications again")
                    self.publish(RESYNC)  # what was told while nobody listened is re-read
                first = False
                while not lost.is_set() and not self._closing:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), self.check_every_s)
                    if not lost.is_set() and not self._closing:
                        await asyncio.wait_for(connection.fetchval("SELECT 1"), self.check_every_s)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database away: keep trying, subscriptions wait meanwhile
                log.warning("notifications: %s; listening again in %ss", exc, self.retry_after_s)
            finally:
                self.listening.clear()
                if connection is not None and not connection.is_closed():
                    connection.terminate()
            first = False
            if self._closing:
                return
            await asyncio.sleep(self.retry_after_s)
