"""HTTP/1.1 connections with bounded request heads: what `kernelindex serve` runs uvicorn with.

uvicorn's httptools protocol sets no limit on a request's head and no time limit for sending it:
httptools keeps an unterminated header line in memory however long it grows (three connections
each sending 24 MiB of one header line grew the server by 72-118 MiB and stayed open), a 200 KB
header line was answered, and a connection that sends its head a byte at a time (slowloris) was
held open for as long as it kept sending. This protocol adds the two bounds of the server's
contract:

- a request head (request line and header fields) over MAX_HEADER_BYTES is answered
  431 Request Header Fields Too Large and the connection closed; httptools is not fed past the
  limit, so an unterminated line never grows past it (plus at most one read of the socket: the
  read in which the head began is counted when the head completes, not as it arrives, since that
  read may also hold the end of the request before it);
- a connection that has not sent a complete head HEADER_TIMEOUT_S after it opened (its first
  request) or after the first byte of its next request is closed, with 408 Request Timeout when
  part of a request had come. Idle time between requests stays uvicorn's keep-alive limit.

A refused connection is closed the way nginx closes one: the answer and a FIN go out at once, what the
client still sends is read and dropped for LINGER_S, then the socket is closed. Each such connection
holds a timer and a parser with at most the limit in it: 150 slowloris connections cost the server
about a megabyte (perf/http_drill.py measures it).

Both are class attributes, so a test can serve with small ones. The protocol is named to uvicorn by
import path (UVICORN_HTTP), which also reaches the worker processes of `serve --workers N`.
"""

from __future__ import annotations

import asyncio
import logging
from asyncio import TimerHandle
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

log = logging.getLogger("kernelindex.web")

MAX_HEADER_BYTES = 64 * 1024
HEADER_TIMEOUT_S = 10.0
# How long a refused connection's further bytes are read and dropped before it is closed.
LINGER_S = 2.0
UVICORN_HTTP = "kernelindex.web.bounded_http:BoundedHttpToolsProtocol"
# What each header field costs on top of its name and value (": " and CRLF), counted like the bytes sent.
_FIELD_OVERHEAD = 4


class _HeadRefused(Exception):
    """Raised from a parser callback to stop httptools reading a head already refused."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    max_header_bytes: int = MAX_HEADER_BYTES
    header_timeout_s: float = HEADER_TIMEOUT_S
    linger_s: float = LINGER_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: TimerHandle | None = None
        # A request's head is being read: its first byte came, its end has not.
        self._head_open = False
        # Bytes of the open head the parser reported (request target, complete header fields), and
        # bytes of the reads that came wholly inside it (an unterminated line the parser buffers).
        self._head_parsed = 0
        self._head_read = 0
        self._heads_begun = 0
        self._refused = False
        self._linger: TimerHandle | None = None

    # -- the connection ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()  # a new connection owes its first request's head within the limit

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the connection is closing: what the client still sends is not read
        inside = self._head_open
        begun = self._heads_begun
        super().data_received(data)
        self._count_read(len(data), inside and begun == self._heads_begun)

    def _count_read(self, size: int, within_open_head: bool) -> None:
        """After a read was parsed: if the head it fell wholly within is still open, count it."""
        if within_open_head and self._head_open and not self._refused:
            # Whatever httptools keeps of an unterminated line is in these reads.
            self._head_read += size
            self._refuse_oversized_head()

    def send_400_response(self, msg: str) -> None:
        if self._refused:
            return  # uvicorn's answer to the parser stopping: the refusal already went out
        super().send_400_response(msg)

    # -- parser callbacks --------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_open = True
        self._head_parsed = self._head_read = 0
        self._heads_begun += 1
        self._arm_head_timer()  # no-op for a connection's first request: its limit runs from the connection

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        if self._refuse_oversized_head():
            raise _HeadRefused()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_parsed += len(name) + len(value) + _FIELD_OVERHEAD
        if self._refuse_oversized_head():
            raise _HeadRefused()
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._cancel_head_timer()
        super().on_headers_complete()

    # -- the bounds --------------------------------------------------------------------------------

    def _refuse_oversized_head(self) -> bool:
        """Refuse the open head if it is over the limit (431); whether it was."""
        if max(self._head_parsed, self._head_read) <= self.max_header_bytes:
            return False
        self._refuse(431, f"the request's header fields are over the limit of {self.max_header_bytes} bytes")
        return True

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._refused or self.transport.is_closing():
            return
        if self.flow.read_paused:
            # We stopped reading (a pipelined request waits for the one before it): not the client's delay.
            self._arm_head_timer()
            return
        if self._head_open:
            self._refuse(408, f"the request's header fields did not arrive within {self.header_timeout_s:g} s")
        else:
            self._refused = True
            self.transport.close()  # nothing of a request came: nothing to answer

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` with `message` and close the connection; the application never sees the request."""
        self._refused = True
        self._head_open = False
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.warning("%s: %s %s", client, status, message)
        body = message.encode("ascii")
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend([
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
            body,
        ])
        self.transport.write(b"".join(content))
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        # A lingering close, as nginx does: the answer and our end of the stream go out now, and what the
        # client is still sending is read and dropped for a moment. Closing at once with its bytes unread
        # makes the kernel reset the connection, which can destroy the answer before the client reads it.
        self.transport.write_eof()
        self.flow.resume_reading()
        self._linger = self.loop.call_later(self.linger_s, self.transport.close)
