"""Framed messages between the candidate harness's processes, and the forks that carry them.

The harness (benchmarks.candidate) runs as three kinds of process: the coordinator, which keeps every
secret and writes the records; the reference process; and one executor per implementation measured.
They talk over pipes, in frames: a 4-byte big-endian length, a JSON object (strict: no NaN), then the
binary blobs the object lists in ``"blobs"`` (output tensors' bytes). Whatever a process that ran
candidate code sends is untrusted input: every size is bounded by the receiver, and a frame that is not
this shape is a ProtocolViolation, never a crash of the receiver.

``fork_role`` forks a child that keeps only its own two pipe ends (every other descriptor is closed
before any role code runs: a candidate cannot find the sandbox's result pipe, nor another process's
channel, under /proc/self/fd), and it runs with one intra-op thread: forking a process whose OpenMP pool
ever ran leaves the child's pool hung, and the sandbox gives every job one thread anyway
(OMP_NUM_THREADS=1).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

_LENGTH = struct.Struct(">I")
MAX_HEADER_BYTES = 1 << 20
_PR_SET_DUMPABLE = 4


class ChannelClosed(Exception):
    """The other end closed its pipe (it exited, crashed or was killed)."""


class ProtocolViolation(Exception):
    """A frame that is not a well-formed message of the agreed size."""


class Channel:
    """One end of a pair of pipes: ``send`` a message, ``receive`` the other side's."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd = read_fd
        self.write_fd = write_fd

    def send(self, message: dict[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> None:
        header = dict(message)
        if blobs:
            header["blobs"] = [len(blob) for blob in blobs]
        data = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
        try:
            _write_all(self.write_fd, _LENGTH.pack(len(data)) + data)
            for blob in blobs:
                _write_all(self.write_fd, blob)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ChannelClosed("the other process closed its channel") from exc

    def receive(self, max_blob_bytes: int = 0, max_blobs: int = 0) -> tuple[dict[str, Any], list[bytes]]:
        """The next message and its blobs; at most ``max_blobs`` blobs of ``max_blob_bytes`` in all."""
        (length,) = _LENGTH.unpack(self._read_exactly(_LENGTH.size))
        if length > MAX_HEADER_BYTES:
            raise ProtocolViolation(f"a message header of {length:,} bytes (at most {MAX_HEADER_BYTES:,})")
        raw = self._read_exactly(length)

        def no_constant(name: str) -> Any:
            raise ValueError(f"{name} is not JSON")

        try:
            message = json.loads(raw, parse_constant=no_constant)
        except (ValueError, RecursionError) as exc:
            raise ProtocolViolation(f"a message that is not JSON ({exc})") from None
        if not isinstance(message, dict):
            raise ProtocolViolation("a message that is not a JSON object")
        sizes = message.pop("blobs", [])
        if not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes):
            raise ProtocolViolation("a message whose blob sizes are not a list of byte counts")
        if len(sizes) > max_blobs or sum(sizes) > max_blob_bytes:
            raise ProtocolViolation(
                f"a message with {len(sizes)} blob(s) of {sum(sizes):,} bytes where at most {max_blobs} of "
                f"{max_blob_bytes:,} bytes were expected"
            )
        return message, [self._read_exactly(size) for size in sizes]

    def _read_exactly(self, count: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            try:
                chunk = os.read(self.read_fd, min(count - len(chunks), 1 << 22))
            except InterruptedError:
                continue
            if not chunk:
                raise ChannelClosed("the other process closed its channel")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[written:]


def make_undumpable() -> None:
    """No other process of this uid may read this one's memory or open its descriptors (ptrace,
    /proc/PID/mem, /proc/PID/fd): the coordinator calls it before forking any child, so a child running
    candidate code cannot reach the coordinator's secrets, its result pipe or another child's channel.
    Forked children inherit it."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_DUMPABLE, 0): {os.strerror(error)}")


class Child:
    """A forked role process and the parent's channel to it."""

    def __init__(self, pid: int, channel: Channel):
        self.pid = pid
        self.channel = channel
        self.status: int | None = None

    def wait(self) -> int:
        """Reap it (it has closed its channel or is being killed); its wait status."""
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
        return self.status

    def kill(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self.wait()
        self.channel.close()

    def describe_end(self) -> str:
        """How it ended, in words ("exited with code 3", "killed by SIGSEGV")."""
        status = self.wait()
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            if number == signal.SIGKILL:
                return f"killed by {name} (possibly out of memory)"
            return f"killed by {name}"
        return f"exited with code {os.WEXITSTATUS(status)}"


def fork_role(role: Callable[[Channel], None]) -> Child:
    """Fork a child that runs ``role(channel)`` with only its channel open, then exits (code 0; 70 when
    role raised, after sending what it could)."""
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            _close_fds_except({0, 1, 2, to_child_r, to_parent_w})
            import torch  # already imported by the parent: this only binds the name

            torch.set_num_threads(1)
            role(Channel(to_child_r, to_parent_w))
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(to_child_r)
    os.close(to_parent_w)
    return Child(pid, Channel(to_parent_r, to_child_w))


def _close_fds_except(keep: set[int]) -> None:
    try:
        open_fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (macOS): every possible number
        open_fds = list(range(3, 1 << 16))
    for fd in open_fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
