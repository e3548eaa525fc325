"""An HTTP/1.1 load generator light enough to share a small machine with the server it measures.

    python -m perf.loadgen http://127.0.0.1:8000 --mix mix.json --rate 1000 --seconds 30
    python -m perf.loadgen http://127.0.0.1:8000 --mix mix.json --closed 16 --seconds 10
    python -m perf.loadgen http://127.0.0.1:8000 --mix mix.json --sequential 300

The mix file is a JSON list of {"name", "weight", "method", "path", "body"} (body: JSON or null).
Three modes:
  --rate R       open loop: requests arrive as a Poisson process of R/s whatever the answers do,
                 each on an idle keep-alive connection (a new one is opened when none is idle, up to
                 --max-connections; past that the request is counted as dropped, an error);
  --closed N     closed loop: N connections, each sending its next request when its answer is in
                 (the saturation rate: requests/s completed);
  --sequential K one connection, K requests one after another (the unloaded latency).
Latency runs from the moment the request is written to the moment its last byte is read. How
late each request left against the Poisson schedule is reported too (lag), so a load generator
that fell behind shows.

Why not hey or wrk: hey needs one Go process per ~40 requests/s to stay open-loop, and at 3,000/s
those took most of a core; wrk has no open-loop mode. This is raw asyncio protocols on uvloop (when
installed): about 30 µs of CPU a request.

Output (--out): one line per request, "sent offset,latency,kind index,status or error" with offsets
in seconds from --t0 (a CLOCK_MONOTONIC time; default: the start), then a summary on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

clock = time.monotonic  # CLOCK_MONOTONIC: the same clock in every process on the machine
KEEP_IDLE_S = 2.0


def write_mix(path, kinds) -> None:
    """Write a --mix file: `kinds` is (name, weight, method, path, JSON body or None) per request kind."""
    path.write_text(json.dumps([{"name": name, "weight": weight, "method": method, "path": url_path, "body": body}
                                for name, weight, method, url_path, body in kinds]))


class Mix:
    def __init__(self, entries: list[dict], host: str):
        self.names = [e["name"] for e in entries]
        self.weights = [float(e["weight"]) for e in entries]
        self.requests = []
        for e in entries:
            body = json.dumps(e["body"]).encode() if e.get("body") is not None else b""
            head = f"{e['method']} {e['path']} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n"
            if body:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            self.requests.append(head.encode() + b"\r\n" + body)

    def pick(self, rng: random.Random) -> int:
        return rng.choices(range(len(self.requests)), weights=self.weights)[0]


class Connection(asyncio.Protocol):
    """One keep-alive connection, one request at a time; parses just enough of the answer to know
    where it ends (Content-Length or chunked)."""

    def __init__(self, on_done: Callable[[Connection, int, float, float, str], None]):
        self.on_done = on_done  # (connection, kind, sent, latency, status or error)
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.kind = -1
        self.sent = 0.0
        self.busy = False
        self.closed = False
        self.last_used = clock()

    def connection_made(self, transport) -> None:
        self.transport = transport

    def send(self, kind: int, request: bytes) -> None:
        assert self.transport is not None, "create_connection hands a connection its transport before it is sent on"
        self.kind, self.busy = kind, True
        self.sent = clock()
        self.transport.write(request)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        status = _complete_response(self.buffer)
        if status is not None and self.busy:
            latency = clock() - self.sent
            self.buffer.clear()
            self.busy = False
            self.last_used = clock()
            self.on_done(self, self.kind, self.sent, latency, status)

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self.busy:
            self.busy = False
            self.on_done(self, self.kind, self.sent, clock() - self.sent, f"connection lost: {exc or 'closed by server'}")


def _complete_response(buffer: bytearray) -> str | None:
    """The status code when `buffer` holds one whole response, else None."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buffer[:end]).lower()
    status = head[9:12].decode()
    body_start = end + 4
    marker = head.find(b"\ncontent-length:")
    if marker >= 0:
        line_end = head.find(b"\r", marker + 1)
        length = int(head[marker + 16:line_end if line_end >= 0 else None])
        return status if len(buffer) - body_start >= length else None
    if b"\ntransfer-encoding: chunked" in head:
        at = body_start
        while True:
            size_end = buffer.find(b"\r\n", at)
            if size_end < 0:
                return None
            size = int(bytes(buffer[at:size_end]).split(b";")[0], 16)
            at = size_end + 2 + size + 2
            if at > len(buffer):
                return None
            if size == 0:
                return status
    return status  # no body (304, 204)


class LoadGenerator:
    def __init__(self, url: str, mix: Mix, *, max_connections: int = 512, seed: int = 1, timeout_s: float = 30.0):
        parts = urlsplit(url)
        if parts.hostname is None:
            raise SystemExit(f"loadgen: {url!r} names no host")
        self.host, self.port = parts.hostname, parts.port or 80
        self.mix = mix
        self.max_connections = max_connections
        self.timeout_s = timeout_s  # an answer not in by then is an error
        self.rng = random.Random(seed)
        self.idle: list[Connection] = []
        self.open = 0
        self.results: list[tuple[float, float, int, str]] = []  # (sent, latency, kind, status or error)
        self.dropped = 0
        self.lag: list[float] = []  # how late each request left against its schedule
        self.waiters: list[asyncio.Future] = []
        self.connections: list[Connection] = []  # every one opened

    def _done(self, conn: Connection, kind: int, sent: float, latency: float, status: str) -> None:
        self.results.append((sent, latency, kind, status))
        if conn.closed:
            self.open -= 1
            if self.waiters:  # a closed or sequential client: it opens another connection
                self.waiters.pop(0).set_result(None)
        elif self.waiters:
            self.waiters.pop(0).set_result(conn)
        else:
            self.idle.append(conn)

    async def connect(self) -> Connection:
        self.open += 1
        try:
            _, conn = await asyncio.get_running_loop().create_connection(
                lambda: Connection(self._done), self.host, self.port)
        except OSError:
            self.open -= 1
            raise
        self.connections.append(conn)
        return conn

    def _take_idle(self) -> Connection | None:
        """The most recently used idle connection. One idle for longer than KEEP_IDLE_S is closed
        instead: the server (uvicorn: 5 s) may be closing it at the moment we write to it."""
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed and clock() - conn.last_used < KEEP_IDLE_S:
                return conn
            if not conn.closed:
                conn.close()
            self.open -= 1
        return None

    async def _acquire(self) -> Connection | None:
        if (conn := self._take_idle()) is not None:
            return conn
        if self.open >= self.max_connections:
            return None
        try:
            return await self.connect()
        except OSError as exc:
            self.results.append((clock(), 0.0, -1, f"connect failed: {exc}"))
            return None

    async def _send_when_connected(self, kind: int, scheduled: float) -> None:
        conn = await self._acquire()
        if conn is None:
            self.dropped += 1
            return
        self.lag.append(clock() - scheduled)
        conn.send(kind, self.mix.requests[kind])

    async def open_loop(self, rate: float, seconds: float, warm_connections: int = 32) -> None:
        """Poisson arrivals at `rate`/s for `seconds`. The schedule is kept by a thread that sleeps
        until each arrival: the event loop's timers have millisecond resolution, which would send
        the requests in millisecond batches, burstier than the load this is meant to be."""
        loop = asyncio.get_running_loop()
        for _ in range(warm_connections):
            self.idle.append(await self.connect())
        pending: set[asyncio.Task] = set()

        def dispatch(kind: int, scheduled: float) -> None:
            if (conn := self._take_idle()) is not None:
                self.lag.append(clock() - scheduled)
                conn.send(kind, self.mix.requests[kind])
            else:  # rare: every connection busy; open one more without holding up the schedule
                task = asyncio.ensure_future(self._send_when_connected(kind, scheduled))
                pending.add(task)
                task.add_done_callback(pending.discard)

        def schedule() -> None:
            start = clock()
            at = start + self.rng.expovariate(rate)
            while at < start + seconds:
                delay = at - clock()
                if delay > 0:
                    time.sleep(delay)
                loop.call_soon_threadsafe(dispatch, self.mix.pick(self.rng), at)
                at += self.rng.expovariate(rate)

        await asyncio.to_thread(schedule)
        await asyncio.sleep(0)  # let the last dispatches run
        await self.drain(pending)

    async def _send_and_wait(self, conn: Connection) -> Connection | None:
        """One request on `conn`; the connection to send the next one on (None: the client stops)."""
        answered = asyncio.get_running_loop().create_future()
        self.waiters.append(answered)
        kind = self.mix.pick(self.rng)
        conn.send(kind, self.mix.requests[kind])
        try:
            answered_on: Connection | None = await asyncio.wait_for(asyncio.shield(answered), timeout=self.timeout_s)
        except TimeoutError:
            self.waiters.remove(answered)
            conn.busy = False
            conn.close()
            self.results.append((conn.sent, clock() - conn.sent, kind, f"no answer in {self.timeout_s:g} s"))
            return await self._reconnect()
        if answered_on is None:  # the server closed the connection: go on with a new one, if it takes one
            return await self._reconnect()
        return answered_on

    async def _reconnect(self) -> Connection | None:
        try:
            return await self.connect()
        except OSError as exc:
            self.results.append((clock(), 0.0, -1, f"connect failed: {exc}"))
            return None

    async def closed_loop(self, clients: int, seconds: float) -> float:
        """Requests/s completed by `clients` connections that each send again as soon as answered."""
        deadline = clock() + seconds

        async def client() -> None:
            conn: Connection | None = await self.connect()
            while conn is not None and clock() < deadline:
                conn = await self._send_and_wait(conn)
            if conn is not None:
                conn.close()

        started = clock()
        await asyncio.gather(*(client() for _ in range(clients)))
        return sum(1 for r in self.results if r[0] < deadline and r[3] == "200") / (clock() - started)

    async def sequential(self, count: int) -> None:
        conn: Connection | None = await self.connect()
        for _ in range(count):
            if conn is None:
                break
            conn = await self._send_and_wait(conn)
        if conn is not None:
            conn.close()

    async def drain(self, pending: set) -> None:
        """Wait up to the timeout for the answers still out; the ones that do not come are errors."""
        deadline = clock() + self.timeout_s
        # Polled on purpose: "an answer is still out" is spread over every connection's protocol
        # callbacks and the pending connects, and is checked once, after the load has stopped.
        # Signalling an Event from each answer would put work on the per-request path this tool
        # keeps small (~30 µs); a 10 ms poll costs the end of a run at most 10 ms.
        while (pending or any(conn.busy for conn in self.connections)) and clock() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for task in pending:
            task.cancel()
        for conn in self.connections:
            if conn.busy:
                conn.busy = False
                self.results.append((conn.sent, clock() - conn.sent, conn.kind, f"no answer in {self.timeout_s:g} s"))
            if not conn.closed:
                conn.close()


REPO = Path(__file__).resolve().parent.parent


def command(url: str, mix: Path, out: Path, *mode: str, t0: float | None = None) -> list[str]:
    """The command line that runs this load generator in a child process, writing --out."""
    cmd = [sys.executable, "-m", "perf.loadgen", url, "--mix", str(mix), *mode, "--out", str(out)]
    return cmd + (["--t0", repr(t0)] if t0 is not None else [])


def read_out(out: Path) -> list[tuple[float, float, int, str]]:
    """An --out file: (sent offset, latency, kind index or -1 for a failed connect, status or error) per request."""
    rows = []
    for line in out.read_text().splitlines():
        sent, latency, kind, status = line.split(",", 3)
        rows.append((float(sent), float(latency), int(kind), status))
    return rows


def run_child(url: str, mix: Path, out: Path, *mode: str, timeout_s: float = 3600) -> tuple[dict, list[tuple[float, float, int, str]]]:
    """Run the load generator in a child process to its end: its summary and its --out rows."""
    done = subprocess.run(command(url, mix, out, *mode), capture_output=True, text=True, cwd=REPO, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"loadgen {' '.join(mode)} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout), read_out(out)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def measure(url: str, mix: Path, out: Path, *mode: str, seconds: float | None = None) -> dict:
    """One run of this load generator in a child process against `url` with the `mix` file, summed up.
    p50/p99 are of the requests answered 200 in its --out file; rps is the closed loop's completed
    rate, else the requests answered 200 over `seconds` (the open loop) or over the run's span."""
    summary, rows = run_child(url, mix, out, *mode, timeout_s=(seconds or 0) + 900)
    out.unlink(missing_ok=True)
    latencies = [latency for _, latency, _, status in rows if status == "200"]
    failures = [status for _, _, _, status in rows if status != "200"]
    if "rate" in summary:
        rps = summary["rate"]
    else:
        span = seconds or (max(sent + latency for sent, latency, _, _ in rows) - min(sent for sent, _, _, _ in rows) if rows else 0)
        rps = len(latencies) / span if span > 0 else float("nan")
    errors = len(failures) + summary["dropped"]
    result = {"requests": len(latencies) + len(failures), "rps": rps,
              "p50_ms": percentile(latencies, 0.50) * 1000, "p99_ms": percentile(latencies, 0.99) * 1000,
              "errors": errors, "dropped": summary["dropped"]}
    if summary.get("lag_p99_ms") is not None:
        result["lag_p99_ms"] = summary["lag_p99_ms"]  # how late the open loop's requests left their schedule
    if errors:
        result["first_error"] = failures[0] if failures else "dropped: no connection free (--max-connections)"
        print(f"{url} {' '.join(mode)}: {errors} failed ({summary['dropped']} dropped); first: {result['first_error']}",
              file=sys.stderr, flush=True)
    return result


class StallWatch:
    """How long this process's event loop was held up: a stall here delays both the sends (they
    then leave in a burst) and the reading of answers, so it shows as server latency. Reported so
    that a figure can be trusted or not."""

    TICK_S = 0.005

    def __init__(self):
        self.worst_s = 0.0
        self.over_10ms = 0

    async def watch(self) -> None:
        while True:
            before = clock()
            await asyncio.sleep(self.TICK_S)
            late = clock() - before - self.TICK_S
            self.worst_s = max(self.worst_s, late)
            self.over_10ms += late > 0.010


def run(loop_coro, stalls: StallWatch | None = None):
    """Run the coroutine to its end on uvloop (the loop `kernelindex serve` uses) when installed; its result."""
    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:
        factory = None

    async def watched():
        watcher = asyncio.ensure_future(stalls.watch()) if stalls else None
        try:
            return await loop_coro
        finally:
            if watcher:
                watcher.cancel()

    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(watched())


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.loadgen", description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--mix", required=True, help="JSON file: [{name, weight, method, path, body}]")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--rate", type=float, help="open loop, requests/s (Poisson arrivals)")
    mode.add_argument("--closed", type=int, help="closed loop with this many connections")
    mode.add_argument("--sequential", type=int, help="this many requests one after another")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--max-connections", type=int, default=512)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for an answer (open loop: for the last answers once the load stops)")
    parser.add_argument("--t0", type=float, help="CLOCK_MONOTONIC time the output offsets count from")
    parser.add_argument("--out", help="write one line per request here")
    args = parser.parse_args()
    with open(args.mix) as f:
        entries = json.load(f)
    host = urlsplit(args.url).netloc
    gen = LoadGenerator(args.url, Mix(entries, host), max_connections=args.max_connections, seed=args.seed,
                        timeout_s=args.timeout)
    t0 = args.t0 if args.t0 is not None else clock()
    # What this process keeps (a tuple per request) is freed by reference counting or never: the
    # cyclic collector has nothing to find, yet a full pass over 2.3 million results takes ~70 ms.
    # In a 10-minute soak such passes left gaps of 51-111 ms in the sends, growing with the list,
    # and the load that piled up meanwhile went out in one burst.
    gc.disable()
    stalls = StallWatch()
    summary: dict = {}
    if args.rate:
        run(gen.open_loop(args.rate, args.seconds), stalls)
        summary["scheduled"] = len(gen.lag) + gen.dropped
    elif args.closed:
        summary["rate"] = run(gen.closed_loop(args.closed, args.seconds), stalls)
    else:
        run(gen.sequential(args.sequential), stalls)
    ok = [r[1] for r in gen.results if r[3] == "200"]
    summary.update({
        "completed": len(gen.results), "ok": len(ok), "errors": len(gen.results) - len(ok), "dropped": gen.dropped,
        "p50_ms": percentile(ok, 0.5) * 1e3, "p99_ms": percentile(ok, 0.99) * 1e3,
        "lag_p99_ms": percentile(gen.lag, 0.99) * 1e3 if gen.lag else None,
        "connections": gen.open,
        "stall_max_ms": stalls.worst_s * 1e3, "stalls_over_10ms": stalls.over_10ms,
    })
    if args.out:
        with open(args.out, "w") as f:
            for sent, latency, kind, status in gen.results:
                f.write(f"{sent - t0:.6f},{latency:.6f},{kind},{status}\n")
    json.dump(summary, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
