"""The importer's traces, kept by file digest and tracer (table problem_traces, migration 0014).

A problem file's trace depends only on its bytes, the tracer (traces.traced_with) and, when it fails on a
missing module, on what is installed. So `ingest kernelbench` traces a file once: a later import (after
any number of seeds, restarts or interruptions) reuses the trace, or the failure while the installed
modules are the same ones it failed under. Each trace is written the moment it finishes, on its own
connection in autocommit, so Ctrl+C keeps every finished trace and the re-run traces only the rest.

Synchronous (psycopg) on purpose: tracing runs in the main thread, where Ctrl+C arrives as
KeyboardInterrupt at once (under asyncio.run the first Ctrl+C only cancels a task, which cannot take
effect while a thread is waiting on the sandbox), and its results are written from the sandbox's
completion callback in that same thread.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from kernelindex.db.urls import to_libpq_url
from kernelindex.ingest.traces import TRACE_STAGES, ProblemTrace, ProblemTraceError, trace_from_analysis

# A failure worth keeping is the problem's own exception at one of its stages: the same bytes under the same
# tracer and modules fail the same way. A timeout or a crash may be the machine's (a loaded host, the OOM
# killer): never kept, so the next import tries again.
KEPT_FAILURE_STAGES = frozenset(TRACE_STAGES)

_MISSING_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
# The distribution to install for a module whose import name is not its package's name.
_DISTRIBUTION_OF = {"sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "pillow", "yaml": "pyyaml"}


def modules_fingerprint() -> str:
    """What is installed, as one digest of the path entries a problem's import searches and the distributions
    in them (their `name-version.dist-info` folders: a listing, not the metadata files, which cost about a
    second to parse for 200 distributions). A failure kept under one fingerprint is tried again under another."""
    names: list[str] = []
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                names.extend(f"{entry}/{item.name}" for item in found if item.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            names.append(f"{entry}: not a folder")
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def missing_module(error: ProblemTraceError) -> str | None:
    """The top-level module a failed import could not find ('transformers'), when that is why it failed."""
    match = _MISSING_MODULE.search(error.message) if error.stage == "import" else None
    return match.group(1).split(".")[0] if match else None


def install_command(modules: Iterable[str]) -> str:
    """`pip install einops transformers`: what would let these problems trace where the importer runs."""
    return "pip install " + " ".join(sorted({_DISTRIBUTION_OF.get(m, m) for m in modules}))


class TraceCache:
    """problem_traces on one autocommit connection. `dry_run`: looked up, never written (a dry run writes
    nothing, not even derived data)."""

    def __init__(self, database_url: str, *, dry_run: bool = False) -> None:
        self._connection = psycopg.connect(to_libpq_url(database_url), autocommit=True)
        self._dry_run = dry_run
        self._fingerprint: str | None = None

    def __enter__(self) -> TraceCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self._connection.close()

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = modules_fingerprint()
        return self._fingerprint

    def lookup(self, files: dict[str, str], tracer: str) -> dict[str, ProblemTrace | ProblemTraceError]:
        """The kept outcome of each digest in ``files`` (digest → file name) traced by ``tracer``: its trace,
        checked as a fresh one is; or its failure, while the installed modules are the ones it failed under.
        A digest missing from the answer is to be traced."""
        if not files:
            return {}
        rows = self._connection.execute(
            "SELECT source_sha256, analysis, error_stage, error_message, modules_fingerprint FROM problem_traces "
            "WHERE tracer = %s AND source_sha256 = ANY(%s)",
            (tracer, sorted(files)),
        ).fetchall()
        found: dict[str, ProblemTrace | ProblemTraceError] = {}
        for digest, analysis, stage, message, fingerprint in rows:
            filename = files[digest]
            if analysis is not None:
                trace = trace_from_analysis(analysis, filename)
                if trace is not None:  # an older or edited document: traced again
                    found[digest] = trace
            elif stage in KEPT_FAILURE_STAGES and fingerprint == self.fingerprint:
                found[digest] = ProblemTraceError(filename, str(stage), str(message))
        return found

    def keep(self, digest: str, tracer: str, outcome: ProblemTrace | ProblemTraceError) -> None:
        """Write one finished trace (or a failure worth keeping) at once, replacing an older outcome."""
        if self._dry_run:
            return
        values: dict[str, Any]
        if isinstance(outcome, ProblemTrace):
            values = {"analysis": Jsonb(outcome.to_json()), "error_stage": None, "error_message": None, "modules_fingerprint": None}
        elif outcome.stage in KEPT_FAILURE_STAGES:
            values = {"analysis": None, "error_stage": outcome.stage, "error_message": outcome.message,
                      "modules_fingerprint": self.fingerprint}
        else:
            return
        self._connection.execute(
            "INSERT INTO problem_traces (source_sha256, tracer, analysis, error_stage, error_message, modules_fingerprint) "
            "VALUES (%(digest)s, %(tracer)s, %(analysis)s, %(error_stage)s, %(error_message)s, %(modules_fingerprint)s) "
            "ON CONFLICT (source_sha256, tracer) DO UPDATE SET analysis = EXCLUDED.analysis, "
            "error_stage = EXCLUDED.error_stage, error_message = EXCLUDED.error_message, "
            "modules_fingerprint = EXCLUDED.modules_fingerprint, traced_at = now()",
            {"digest": digest, "tracer": tracer, **values},
        )
