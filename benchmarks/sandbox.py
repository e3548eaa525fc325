"""Run untrusted Python (a KernelBench problem, a submitted kernel) in a confined, fresh process.

One implementation for everything that executes other people's code: the importer's tracer
(kernelindex.ingest.problem_trace) and, later, the GPU workers that run submitted ``ModelNew`` kernels.
Stdlib only at import, so it runs wherever torch runs; it never imports kernelindex.

The shape, and why:

- A **zygote**: a trusted process started fresh (``python -c``, a scrubbed environment, its own session)
  that imports the modules named in ``preload`` (torch, the tracer) and runs a trusted warm-up once. Every
  job is a ``fork`` of it, so a job starts warm in ~10 ms instead of ~2 s for ``import torch``, and never in
  a process that ran other untrusted code (a problem that patches torch or the tracer changes nothing
  for the next one).
- Per job, a **supervisor** (trusted, forked from the zygote) enters new PID, network, mount, IPC and UTS
  namespaces, forks the **runner**, and enforces the wall-clock limit. The runner is PID 1 of its
  namespace: when it ends, or is killed, the kernel kills every process it started (daemons included).
- The runner mounts a private tmpfs over /tmp, /var/tmp and /dev/shm (the scratch directory is
  ``/tmp/sandbox`` inside it, gone when the namespace is), mounts a /proc of its own namespace, sets the
  rlimits, drops to a dedicated unprivileged uid/gid with no supplementary groups and ``no_new_privs``,
  closes every descriptor but the result pipe, replaces the environment, and only then calls the job's
  function. A result is JSON (``{"ok": value}`` or ``{"raised": "Type: message"}``) written to the
  result pipe; the zygote caps its size and forwards it as text; the parent parses and checks it. Nothing
  from a job is ever unpickled.

Where the OS lacks these (not root, not Linux, namespaces refused) the level is ``"rlimits"``: a fresh
fork per job with rlimits, a scrubbed environment, a scratch cwd removed afterwards, its own session
killed with ``killpg`` — but the job runs as the calling user, can use the network, write wherever that
user can, reach that user's files and sockets (an embedded database's included), and a daemon that
leaves its session survives. ``Sandbox.level`` and ``Sandbox.missing`` say which applies.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import errno
import gc
import importlib
import json
import math
import os
import resource  # at import, before any fork: see _wait
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "LEVEL_NAMESPACES",
    "LEVEL_RLIMITS",
    "STATUSES",
    "Limits",
    "Outcome",
    "Sandbox",
    "SandboxError",
    "describe_sandbox_failure",
    "parse_result",
]

LEVEL_NAMESPACES = "namespaces"
LEVEL_RLIMITS = "rlimits"
# What an rlimits-only sandbox does not give, in the words the ingest prints.
MISSING_WITHOUT_NAMESPACES = (
    "network isolation",
    "database and file isolation (runs as the calling user)",
    "killing daemons that leave their session",
)

# ok: the function returned (value is what it returned); raised: it raised (detail is "Type: message");
# timeout: past the wall-clock limit; cpu-limit: past the CPU-time limit; crash: the runner died
# (a signal, os._exit, a segfault); bad-result: the result was too large or not the expected JSON;
# sandbox-error: the confinement itself could not be set up, so the job never ran; cancelled: stopped
# on request (Sandbox.stop_running), whatever it had done.
STATUSES = ("ok", "raised", "timeout", "cpu-limit", "crash", "bad-result", "sandbox-error", "cancelled")

GiB = 1024**3
MiB = 1024**2
# Dedicated uids, one per concurrent slot: never a real account, so the job owns no file outside its
# scratch and RLIMIT_NPROC counts only its own processes.
SANDBOX_UID_BASE = 2_000_000_000
# The name a job sees for itself (no passwd entry exists for its uid).
SANDBOX_USER = "kernelindex-sandbox"
_MESSAGE_LIMIT = 2000
_BACKSTOP_S = 20  # the zygote kills a supervisor this long after its own deadline should have fired

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_NAMESPACES = _CLONE_NEWNS | _CLONE_NEWUTS | _CLONE_NEWIPC | _CLONE_NEWPID | _CLONE_NEWNET
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_BIND, _MS_MOVE, _MS_REC, _MS_PRIVATE = 4096, 8192, 16384, 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38


class SandboxError(RuntimeError):
    """The sandbox itself failed (its zygote would not start or answer); no job result is implied."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one job may use. ``address_space`` is never set below what the zygote already maps plus
    ``address_space_headroom`` (a CUDA build of torch maps several GiB at import)."""

    wall_s: float = 60.0
    cpu_s: float | None = None  # None: the wall-clock limit (one thread cannot use more)
    address_space: int | None = 8 * GiB
    address_space_headroom: int = 2 * GiB
    processes: int = 64  # threads count too
    open_files: int = 256
    file_size: int = 64 * MiB
    scratch_bytes: int = 256 * MiB  # the tmpfs behind /tmp, /var/tmp, /dev/shm (namespaces level)
    result_bytes: int = 1 * MiB

    def __post_init__(self) -> None:
        if not self.wall_s > 0:
            raise ValueError("wall_s must be positive")
        for name in ("processes", "open_files", "file_size", "scratch_bytes", "result_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How one job ended: ``status`` (one of STATUSES), ``value`` (the function's JSON result when ok),
    ``detail`` (one line: the exception, signal or limit)."""

    status: str
    value: Any = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# --- the parent's side ----------------------------------------------------------------------------------


class Sandbox:
    """A zygote and the jobs forked from it. Use as a context manager, or call close().

    ``preload``: modules the zygote imports once (they must be import-safe and trusted). ``warm_up``:
    ``"module:function"`` the zygote calls once with no arguments before reporting ready (pays lazy
    imports, so no job is charged for them). ``workers``: jobs run at once. ``level``: "auto" (the
    strongest the OS allows), or LEVEL_RLIMITS to force the weaker one.
    """

    def __init__(
        self, preload: Sequence[str] = (), warm_up: str | None = None, *, workers: int = 1,
        limits: Limits | None = None, level: str = "auto", startup_timeout_s: float = 180,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if level not in ("auto", LEVEL_NAMESPACES, LEVEL_RLIMITS):
            raise ValueError(f"unknown sandbox level {level!r}")
        self.preload = list(preload)
        self.warm_up = warm_up
        self.workers = workers
        self.limits = limits or Limits()
        self.requested_level = level
        self.startup_timeout_s = startup_timeout_s
        self.level = ""
        self.missing: list[str] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        # Requests are numbered across calls, so a stop meant for one job never reaches a later one; the
        # numbers of the jobs the zygote holds now. stop_running() comes from another thread than map().
        self._issued = 0
        self._in_flight: set[int] = set()
        self._write_lock = threading.Lock()
        self._start()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        """One line naming the level in use and what it does not guarantee."""
        return self.describe_level(self.level, self.missing)

    @staticmethod
    def describe_level(level: str, missing: Sequence[str]) -> str:
        if not missing:
            return f"sandbox: {level} (fresh process per job, no network, unprivileged uid, private /tmp, rlimits)"
        return f"sandbox: {level} only; NOT guaranteed: {', '.join(missing)}"

    def run(self, function: str, payload: Any) -> Outcome:
        return self.map(function, [payload])[0]

    def map(self, function: str, payloads: Iterable[Any], on_done: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
        """Call ``function`` ("module:name", a module the zygote can import) once per payload, each in a
        fresh confined process; outcomes in payload order. A payload and a result are JSON values."""
        requests = [json.dumps({"function": function, "payload": p}, allow_nan=False) for p in payloads]
        base, self._issued = self._issued, self._issued + len(requests)
        outcomes: list[Outcome | None] = [None] * len(requests)
        pending = deque(range(len(requests)))
        running: dict[int, float] = {}  # index → backstop deadline
        restarts = 0
        while pending or running:
            while pending and len(running) < self.workers:
                index = pending.popleft()
                self._in_flight.add(base + index)
                if not self._send(base + index, requests[index]):
                    self._in_flight.discard(base + index)
                    pending.appendleft(index)
                    break
                running[index] = time.monotonic() + self.limits.wall_s + 2 * _BACKSTOP_S
            event = self._next_event(min(running.values()) if running else None)
            if event is None:  # the zygote died or stopped answering: the jobs it held fail, a new one takes the rest
                for index in running:
                    self._in_flight.discard(base + index)
                    outcomes[index] = Outcome("crash", None, "sandbox zygote stopped answering")
                    if on_done:
                        on_done(index, outcomes[index])  # type: ignore[arg-type]
                running.clear()
                restarts += 1
                self._kill()
                if restarts > 3:
                    raise SandboxError("the sandbox zygote died repeatedly")
                if pending:
                    self._start()
                continue
            number = event.get("id")
            job_id = number - base if isinstance(number, int) else None
            if job_id is None or job_id not in running:
                continue
            del running[job_id]
            self._in_flight.discard(base + job_id)
            outcome = _outcome_from_event(event, self.limits.result_bytes)
            outcomes[job_id] = outcome
            if on_done:
                on_done(job_id, outcome)
        return [o if o is not None else Outcome("crash", None, "no result") for o in outcomes]

    def stop_running(self) -> int:
        """Stop the jobs running now (from any thread, while another waits in ``map``): each is killed
        with everything it started and ends ``cancelled``; jobs asked for later run as usual. The number
        of jobs asked to stop."""
        numbers = sorted(self._in_flight)
        for number in numbers:
            try:
                self._write(json.dumps({"cancel": number}))
            except OSError:  # the zygote is gone: its jobs end anyway
                return 0
        return len(numbers)

    def close(self) -> None:
        self._kill()

    # --- zygote plumbing ---

    def _start(self) -> None:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        boot = "import benchmarks.sandbox as s; s._zygote_main()"
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # -E: no PYTHON* variables; the path this process imports from is handed over instead.
        self._process = subprocess.Popen(
            [sys.executable, "-E", "-c", f"import sys; sys.path.insert(0, {root!r}); {boot}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd="/", close_fds=True,
            start_new_session=True,  # Ctrl-C reaches the ingest, which closes the sandbox; not the jobs
        )
        self._buffer = b""
        hello = {
            "sys_path": [p for p in sys.path if p], "preload": self.preload, "warm_up": self.warm_up,
            "workers": self.workers, "limits": dataclasses.asdict(self.limits), "parent": os.getpid(),
            "level": self.requested_level,
        }
        try:
            self._write(json.dumps(hello))
        except OSError as exc:
            self._kill()
            raise SandboxError(f"sandbox zygote did not start: {exc}") from exc
        ready = self._next_event(time.monotonic() + self.startup_timeout_s)
        if ready is None or ready.get("event") != "ready":
            detail = ready.get("detail") if ready else "no answer"
            self._kill()
            raise SandboxError(f"sandbox zygote did not start: {detail}")
        self.level = str(ready.get("level"))
        self.missing = [str(m) for m in ready.get("missing", [])]

    def _send(self, index: int, request: str) -> bool:
        try:
            self._write(f'{{"id": {index}, ' + request[1:])
            return True
        except OSError:
            return False

    def _write(self, line: str) -> None:
        with self._write_lock:  # whole lines: stop_running writes from another thread
            process = self._process
            if process is None or process.stdin is None:
                raise OSError(errno.EPIPE, "the sandbox zygote is not running")
            process.stdin.write(line.encode() + b"\n")
            process.stdin.flush()

    def _next_event(self, deadline: float | None) -> dict[str, Any] | None:
        """The zygote's next message; None when it died, sent nonsense or passed the deadline."""
        process = self._process
        if process is None or process.stdout is None:
            return None
        fd = process.stdout.fileno()
        limit = 8 * self.limits.result_bytes + 65536
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk or len(self._buffer) > limit:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            event = json.loads(line)
        except ValueError:
            return None
        return event if isinstance(event, dict) else None

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=2)  # a zygote whose stdin closes kills its jobs and exits
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


def _outcome_from_event(event: dict[str, Any], result_bytes: int) -> Outcome:
    status = event.get("status")
    detail = _clip(str(event.get("detail", "")))
    if status != "exited":
        return Outcome(status if status in STATUSES else "crash", None, detail)
    text = event.get("result")
    if not isinstance(text, str) or not text:
        return Outcome("crash", None, detail or "ended without a result")
    return parse_result(text, result_bytes)


def parse_result(text: str, result_bytes: int = Limits.result_bytes) -> Outcome:
    """A runner's result text as an Outcome: exactly ``{"ok": value}`` or ``{"raised": "text"}``, strict
    JSON (no NaN, no Infinity), at most ``result_bytes``; anything else is "bad-result"."""
    if len(text.encode("utf-8", "surrogatepass")) > result_bytes:
        return Outcome("bad-result", None, f"result over {result_bytes:,} bytes")

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        data = json.loads(text, parse_constant=no_constant)
    except (ValueError, RecursionError) as exc:
        return Outcome("bad-result", None, _clip(f"result is not JSON: {exc}"))
    if isinstance(data, dict) and len(data) == 1:
        if "ok" in data:
            return Outcome("ok", data["ok"], "")
        if isinstance(data.get("raised"), str):
            return Outcome("raised", None, _clip(data["raised"]))
        if isinstance(data.get("setup"), str):
            return Outcome("sandbox-error", None, _clip("confinement failed: " + data["setup"]))
    return Outcome("bad-result", None, "result is not {'ok': ...} or {'raised': '...'}")


def _size(value: int) -> str:
    if value >= GiB and value % (GiB // 4) == 0:
        return f"{value / GiB:g} GiB"
    return f"{value / 2**20:.0f} MiB"


def describe_sandbox_failure(outcome: Outcome, limits: Limits | None = None) -> str:
    """The one-line failure reason for a job whose sandbox outcome is not ok (the worker's words for it)."""
    detail = " ".join((outcome.detail or "").split())
    status = outcome.status
    if status == "ok":
        raise ValueError("the outcome is ok: there is no failure to describe")
    if status == "timeout":
        wall = f"{limits.wall_s:g} s" if limits is not None else detail.removeprefix("no result within ").split(";")[0] or "the limit"
        return f"timed out after {wall} (killed)"
    if status == "cpu-limit":
        return f"exceeded the CPU-time limit: {detail}" if detail else "exceeded the CPU-time limit"
    if status == "crash":
        signal_name = detail.removeprefix("killed by ") if detail.startswith("killed by ") else None
        if signal_name == "SIGKILL" and limits is not None and limits.address_space is not None:
            return f"crashed: SIGKILL (killed; possibly out of memory, limit {_size(limits.address_space)})"
        if signal_name:
            return f"crashed: {signal_name}"
        return f"crashed: {detail}" if detail else "crashed"
    if status == "raised":
        head = detail.split(":", 1)[0]
        if head == "MemoryError" or "can't allocate memory" in detail or "out of memory" in detail.lower():
            limit = f" (limit {_size(limits.address_space)})" if limits is not None and limits.address_space else ""
            return f"ran out of memory{limit}: {detail}"
        if head == "PayloadError":
            return f"the job's payload is malformed: {detail}"
        return f"the measurement raised: {detail}"
    if status == "bad-result":
        return f"returned an unusable result: {detail}"
    if status == "sandbox-error":
        return f"the sandbox could not be set up (the job never ran): {detail}"
    if status == "cancelled":
        return "cancelled: stopped while it ran"
    return f"{status}: {detail}"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


# --- the zygote (a trusted process; everything below runs outside the parent) -----------------------------


_LIBC: Any = None


def _libc() -> Any:
    # Loaded once, in the zygote: find_library runs ldconfig, tens of ms a job if done after each fork.
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _LIBC


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _probe_namespaces() -> str | None:
    """None when a forked child can enter new namespaces as root; else why not."""
    if not sys.platform.startswith("linux"):
        return f"{sys.platform} has no Linux namespaces"
    if os.geteuid() != 0:
        return "not root"
    pid = os.fork()
    if pid == 0:
        try:
            code = 0 if _libc().unshare(_NAMESPACES) == 0 else 1
        except BaseException:
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return None if os.waitstatus_to_exitcode(status) == 0 else "unshare() of new namespaces refused"


@dataclasses.dataclass
class _Job:
    index: int
    request: dict[str, Any]
    slot: int = -1
    pid: int = 0
    result_fd: int = -1
    status_fd: int = -1
    result: bytearray = dataclasses.field(default_factory=bytearray)
    status: bytearray = dataclasses.field(default_factory=bytearray)
    oversize: bool = False
    backstop: float = math.inf
    killed_by_backstop: bool = False
    cancelled: bool = False


def _zygote_main() -> None:
    hello = json.loads(sys.stdin.buffer.readline())
    for entry in reversed(hello["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _set_parent_death_signal()
    if os.getppid() != hello["parent"]:  # the parent died before the line above
        os._exit(1)
    # Undumpable, and so every fork of it: no process of this uid (a job at the rlimits level runs as the
    # calling user) may read its memory or open its descriptors under /proc/PID/fd, where the pipe that
    # carries every job's result to the parent is.
    if sys.platform.startswith("linux"):
        _libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limits = Limits(**hello["limits"])
    reason = "asked for the rlimits level" if hello["level"] == LEVEL_RLIMITS else _probe_namespaces()
    level = LEVEL_NAMESPACES if reason is None else LEVEL_RLIMITS
    out = sys.stdout.buffer

    def emit(event: dict[str, Any]) -> None:
        try:
            out.write(json.dumps(event).encode() + b"\n")
            out.flush()
        except OSError:  # the parent is gone; its jobs are being killed anyway
            pass

    if hello["level"] == LEVEL_NAMESPACES and reason is not None:
        emit({"event": "failed", "detail": f"namespaces unavailable: {reason}"})
        return
    try:
        for name in hello["preload"]:
            importlib.import_module(name)
        if hello["warm_up"]:
            _resolve(hello["warm_up"])()
    except BaseException as exc:
        emit({"event": "failed", "detail": _clip(f"preload failed: {type(exc).__name__}: {exc}")})
        return
    _libc()
    # Frozen objects are never touched by the collector, so a fork's pages stay shared.
    gc.freeze()
    emit({"event": "ready", "level": level, "missing": [] if level == LEVEL_NAMESPACES else list(MISSING_WITHOUT_NAMESPACES),
          "why": reason})
    _zygote_loop(hello["workers"], limits, level, emit)


def _zygote_loop(workers: int, limits: Limits, level: str, emit: Callable[[dict[str, Any]], None]) -> None:
    stdin = sys.stdin.buffer.fileno()
    pending: deque[_Job] = deque()
    running: dict[int, _Job] = {}  # by fd (result and status both)
    free_slots = list(range(workers))
    buffer = b""
    open_input = True
    while open_input or pending or running:
        while pending and free_slots:
            job = pending.popleft()
            job.slot = free_slots.pop(0)
            _fork_job(job, limits, level)
            running[job.result_fd] = job
            running[job.status_fd] = job
        fds = list(running) + ([stdin] if open_input else [])
        if not fds:
            break
        jobs = {id(j): j for j in running.values()}.values()
        nearest = min((j.backstop for j in jobs), default=math.inf)
        wait = None if math.isinf(nearest) else max(0.0, nearest - time.monotonic())
        readable, _, _ = select.select(fds, [], [], wait)
        for fd in readable:
            if fd == stdin:
                chunk = os.read(stdin, 1 << 20)
                if not chunk:
                    # The parent is gone or closing: nothing more will be asked, and nothing running is wanted.
                    open_input = False
                    pending.clear()
                    for job in {id(j): j for j in running.values()}.values():
                        _kill_quietly(job.pid)
                    continue
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    request = json.loads(line)
                    if "cancel" in request:
                        _cancel(request["cancel"], pending, running, emit)
                    else:
                        pending.append(_Job(request.pop("id"), request))
                continue
            job = running[fd]
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if fd == job.result_fd:
                if chunk and not job.oversize:
                    job.result += chunk
                    if len(job.result) > limits.result_bytes:
                        job.oversize = True
                        _kill_quietly(job.pid)  # its runner dies with it (parent-death signal)
                if not chunk:
                    del running[fd]
                    os.close(fd)
                    job.result_fd = -1
            else:
                if chunk:
                    job.status += chunk[:4096]
                else:
                    del running[fd]
                    os.close(fd)
                    job.status_fd = -1
                    _finish(job, running, limits, emit)
                    free_slots.append(job.slot)
        now = time.monotonic()
        for job in {id(j): j for j in running.values()}.values():
            if now >= job.backstop and not job.killed_by_backstop:
                job.killed_by_backstop = True
                _kill_quietly(job.pid)


def _cancel(index: Any, pending: deque[_Job], running: dict[int, _Job], emit: Callable[[dict[str, Any]], None]) -> None:
    """Stop job ``index``: not started yet, it never is; running, its supervisor is told (SIGTERM) to kill
    the runner and all it started and to report it cancelled. A job already finished is left alone."""
    for job in list(pending):
        if job.index == index:
            pending.remove(job)
            emit({"id": index, "status": "cancelled", "detail": "stopped before it started"})
            return
    for job in {id(j): j for j in running.values()}.values():
        if job.index == index and not job.cancelled:
            job.cancelled = True
            try:
                os.kill(job.pid, signal.SIGTERM)
            except OSError:
                pass


def _kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _finish(job: _Job, running: dict[int, _Job], limits: Limits, emit: Callable[[dict[str, Any]], None]) -> None:
    """The supervisor has ended: reap it, take what the runner wrote, report one event."""
    os.waitpid(job.pid, 0)
    if job.result_fd >= 0:
        # Everything that could hold the pipe is dead at the namespaces level; at the rlimits level a
        # daemon may keep it open, so read only what is already there.
        os.set_blocking(job.result_fd, False)
        try:
            while not job.oversize:
                chunk = os.read(job.result_fd, 65536)
                if not chunk:
                    break
                job.result += chunk
                job.oversize = len(job.result) > limits.result_bytes
        except BlockingIOError:
            pass
        running.pop(job.result_fd, None)
        os.close(job.result_fd)
        job.result_fd = -1
    try:
        status = json.loads(bytes(job.status))
    except ValueError:
        status = {"status": "crash", "detail": "the sandbox supervisor died" + (" (backstop)" if job.killed_by_backstop else "")}
        if job.cancelled:  # stopped before it could say so (the SIGTERM came before its handler)
            status = {"status": "cancelled", "detail": "stopped on request"}
    event: dict[str, Any] = {"id": job.index, **status}
    if job.oversize:
        event = {"id": job.index, "status": "bad-result", "detail": f"result over {limits.result_bytes:,} bytes"}
    elif status.get("status") == "exited":
        event["result"] = bytes(job.result).decode("utf-8", "replace")
    emit(event)


def _fork_job(job: _Job, limits: Limits, level: str) -> None:
    result_r, result_w = os.pipe()
    status_r, status_w = os.pipe()
    zygote = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(result_r)
            os.close(status_r)
            _supervise(job, zygote, result_w, status_w, limits, level)
        finally:
            os._exit(70)
    os.close(result_w)
    os.close(status_w)
    job.pid, job.result_fd, job.status_fd = pid, result_r, status_r
    job.backstop = time.monotonic() + limits.wall_s + _BACKSTOP_S


# --- the supervisor (trusted; one per job) ----------------------------------------------------------------


def _supervise(job: _Job, zygote: int, result_w: int, status_w: int, limits: Limits, level: str) -> None:
    def report(status: dict[str, Any]) -> None:
        os.write(status_w, json.dumps(status).encode())
        os._exit(0)

    _set_parent_death_signal()
    if os.getppid() != zygote:
        os._exit(1)
    os.setpgid(0, 0)
    scratch = None
    if level == LEVEL_NAMESPACES:
        try:
            _check(_libc().unshare(_NAMESPACES), "unshare")
        except OSError as exc:
            report({"status": "sandbox-error", "detail": str(exc)})
    else:
        scratch = tempfile.mkdtemp(prefix="sandbox-")
    life_r, life_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(status_w)
            os.close(life_w)
            _run_confined(job, result_w, life_r, limits, level, scratch)
        finally:
            os._exit(71)
    os.close(result_w)
    os.close(life_r)
    stopped: list[bool] = []

    def stop(signum: int, frame: Any) -> None:
        # Sandbox.stop_running, through the zygote: the runner's session (at the namespaces level, its
        # whole PID namespace) killed now; _wait then returns, and the job is reported cancelled.
        stopped.append(True)
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass

    # Set here, not before the fork: the runner must not inherit it (a SIGTERM before this line kills the
    # supervisor, and the zygote reports the job cancelled all the same).
    signal.signal(signal.SIGTERM, stop)
    status, usage, timed_out = _wait(pid, started + limits.wall_s)
    if level != LEVEL_NAMESPACES:
        try:
            os.killpg(pid, signal.SIGKILL)  # what it started in its own session
        except OSError:
            pass
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    cpu_used = usage.ru_utime + usage.ru_stime if usage else 0.0
    cpu_limit = _cpu_limit(limits)
    if stopped:
        report({"status": "cancelled", "detail": "stopped on request"})
    if timed_out:
        report({"status": "timeout", "detail": f"no result within {limits.wall_s:g} s; killed"})
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu_used >= cpu_limit - 0.5):
            report({"status": "cpu-limit", "detail": f"used more than {cpu_limit} s of CPU time; killed"})
        report({"status": "crash", "detail": f"killed by {_signal_name(number)}"})
    code = os.WEXITSTATUS(status)
    if code != 0:
        report({"status": "crash", "detail": f"exited with code {code}"})
    report({"status": "exited"})


def _wait(pid: int, deadline: float) -> tuple[int, Any, bool]:
    """(wait status, rusage, timed out) of the runner; killed at the deadline.

    os.wait4 needs the `resource` module, imported at the top of this file: imported here, lazily, its
    shared object could be unreadable while the runner remounts directories in the mount namespace the
    supervisor shares with it (0.4% of jobs crashed "the sandbox supervisor died" that way)."""
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    timed_out = False
    delay = 0.001
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, timed_out
        remaining = deadline - time.monotonic()
        if remaining <= 0 and not timed_out:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            return status, usage, True
        if pidfd is not None:
            select.select([pidfd], [], [], max(0.0, remaining))
        else:
            time.sleep(min(delay, max(0.0, remaining)))
            delay = min(delay * 2, 0.05)


def _cpu_limit(limits: Limits) -> int:
    return max(1, math.ceil(limits.cpu_s if limits.cpu_s is not None else limits.wall_s))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# --- the runner (confines itself, then runs the untrusted function) ----------------------------------------


def _run_confined(job: _Job, result_w: int, life_r: int, limits: Limits, level: str, scratch: str | None) -> None:
    try:
        scratch = _confine(job, result_w, life_r, limits, level, scratch)
    except BaseException as exc:  # never run untrusted code half-confined
        _write_all(result_w, json.dumps({"setup": _clip(f"{type(exc).__name__}: {exc}")}).encode())
        os._exit(0)
    try:
        value = _resolve(job.request["function"])(job.request["payload"])
        text = json.dumps({"ok": value}, allow_nan=False)
    except BaseException as exc:  # SystemExit too: a job's sys.exit() is its answer, not the runner's
        text = json.dumps({"raised": _clip(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)})
    _write_all(result_w, text.encode("utf-8", "surrogatepass"))
    os._exit(0)


def _confine(job: _Job, result_w: int, life_r: int, limits: Limits, level: str, scratch: str | None) -> str:
    libc = _libc()
    os.setsid()
    uid = gid = None
    if level == LEVEL_NAMESPACES:
        # PID 1 of a fresh PID namespace: when this process ends, the kernel kills all it started.
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
        options = f"size={limits.scratch_bytes},mode=1777".encode()
        targets = [t for t in _SCRATCH_MOUNTS if os.path.isdir(t)]
        # Import folders under a scratch mount (a checkout and its venv in /tmp) are held as detached copies
        # of their mounts, so the private tmpfs does not hide them: a lazy import inside a job still works.
        held = _hold_folders(libc, [f for f in _import_folders() if any(f == t or f.startswith(t + "/") for t in targets)])
        for target in targets:
            _check(libc.mount(b"tmpfs", target.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options), f"mount tmpfs {target}")
        _put_back_read_only(libc, held)
        _expose_interpreter(libc)
        # A /proc of this PID namespace: the ingest's processes (their command lines, environments) are not there.
        _check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None), "mount /proc")
        libc.sethostname(b"sandbox", 7)
        uid = gid = SANDBOX_UID_BASE + job.slot
        scratch = "/tmp/sandbox"
        os.mkdir(scratch, 0o700)
        os.chown(scratch, uid, gid)
    assert scratch is not None
    os.chdir(scratch)
    _set_limits(limits)
    if uid is not None and gid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise OSError(errno.EPERM, "could not drop to the sandbox uid")
    if sys.platform.startswith("linux"):
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    # After the uid change (which clears it): die with the supervisor. If it is already gone, stop here.
    _set_parent_death_signal()
    if select.select([life_r], [], [], 0)[0]:
        os._exit(72)
    _close_fds_except(result_w)
    os.environ.clear()
    # USER and LOGNAME because the job's uid has no passwd entry, and getpass.getuser() falls back to one:
    # torch.compile names its cache folder by it, so every inductor job failed on the H200 ("getpwuid(): uid
    # not found") while eager ran.
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8",
                       "OMP_NUM_THREADS": "1", "USER": SANDBOX_USER, "LOGNAME": SANDBOX_USER})
    tempfile.tempdir = scratch
    return scratch


_SCRATCH_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm")
_AT_FDCWD = -100
_OPEN_TREE_CLONE = 1
_AT_RECURSIVE = 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 4
# open_tree(2) and move_mount(2) (Linux 5.2): the same numbers on every architecture's syscall table.
_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429


def _import_folders() -> list[str]:
    """The folders Python imports from (and its prefixes), outermost first, none inside another."""
    folders = sorted({os.path.realpath(p if os.path.isdir(p) else os.path.dirname(p))
                      for p in (*sys.path, sys.prefix, sys.base_prefix) if p and os.path.exists(p)})
    outermost: list[str] = []
    for folder in folders:
        if not any(folder == o or folder.startswith(o.rstrip("/") + "/") for o in outermost):
            outermost.append(folder)
    return outermost


def _hold_folders(libc: Any, folders: list[str]) -> list[tuple[int, str]]:
    """Detached clones of these folders' mounts (open_tree), to put back after a mount covers them."""
    held = []
    for folder in folders:
        fd = libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, folder.encode(), _OPEN_TREE_CLONE | _AT_RECURSIVE | os.O_CLOEXEC)
        _check(0 if fd >= 0 else -1, f"open_tree {folder}")
        held.append((fd, folder))
    return held


def _put_back_read_only(libc: Any, held: list[tuple[int, str]]) -> None:
    for fd, folder in held:
        os.makedirs(folder, 0o755, exist_ok=True)
        _check(libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, folder.encode(), _MOVE_MOUNT_F_EMPTY_PATH), f"move_mount {folder}")
        _check(libc.mount(None, folder.encode(), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None), f"read-only {folder}")
        os.close(fd)


def _expose_interpreter(libc: Any) -> None:
    """Make the folders Python imports from readable by the sandbox uid, read-only, and nothing beside
    them: an interpreter under a private home (pyenv in /root) would otherwise fail every import not
    already made in the zygote. The private folder is covered by an empty tmpfs (hiding all else in it,
    a data directory included) into which only those folders are bound."""
    folders = sorted({os.path.realpath(p if os.path.isdir(p) else os.path.dirname(p))
                      for p in (*sys.path, sys.prefix, sys.base_prefix) if p and os.path.exists(p)})
    closed: dict[str, list[str]] = {}
    for folder in folders:
        top = _first_closed(folder)
        if top is not None and not any(folder.startswith(f + "/") for f in closed.get(top, [])):
            closed.setdefault(top, []).append(folder)
    for number, (top, inside) in enumerate(closed.items()):
        stages = []
        for index, folder in enumerate(inside):
            stage = f"/tmp/.expose-{number}-{index}"
            os.mkdir(stage, 0o700)
            _check(libc.mount(folder.encode(), stage.encode(), None, _MS_BIND | _MS_REC, None), f"bind {folder}")
            stages.append((stage, folder))
        _check(libc.mount(b"tmpfs", top.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, b"size=1m,mode=0755"), f"cover {top}")
        for stage, folder in stages:
            os.makedirs(folder, 0o755, exist_ok=True)
            _check(libc.mount(stage.encode(), folder.encode(), None, _MS_MOVE, None), f"move {folder}")
            _check(libc.mount(None, folder.encode(), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None), f"read-only {folder}")
            os.rmdir(stage)


def _first_closed(path: str) -> str | None:
    """The outermost folder on the way to path that other users cannot enter; None when all are open."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            if not os.stat(current).st_mode & 0o001:
                return current
        except OSError:
            return None
    return None


def _set_limits(limits: Limits) -> None:
    def cap(which: int, value: int) -> None:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    if limits.address_space is not None:
        cap(resource.RLIMIT_AS, max(limits.address_space, _mapped_bytes() + limits.address_space_headroom))
    cpu = _cpu_limit(limits)
    _, hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2 if hard_cpu == resource.RLIM_INFINITY else min(cpu + 2, hard_cpu)))
    cap(resource.RLIMIT_NPROC, limits.processes)
    cap(resource.RLIMIT_NOFILE, limits.open_files)
    cap(resource.RLIMIT_FSIZE, limits.file_size)
    cap(resource.RLIMIT_CORE, 0)


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _close_fds_except(keep: int) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2 and null != keep:
        os.close(null)
    # Python's own file objects for 0/1/2 stay valid (they now point at /dev/null).
    try:
        open_fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (macOS): every possible number
        open_fds = list(range(3, 1 << 16))
    for fd in open_fds:
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _set_parent_death_signal() -> None:
    if sys.platform.startswith("linux"):
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            written = os.write(fd, data)
            data = data[written:]
    except OSError:
        pass


def _resolve(name: str) -> Callable[..., Any]:
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected 'module:function', got {name!r}")
    function = getattr(importlib.import_module(module_name), attribute)
    if not callable(function):
        raise TypeError(f"{name} is not callable")
    return function
