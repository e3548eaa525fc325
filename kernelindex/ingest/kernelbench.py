"""`kernelindex ingest kernelbench PATH`: every problem of a KernelBench checkout as a workload, and
every baseline timing file as reported runs.

Problems are traced on the meta device, each in a fresh sandboxed process (kernelindex.ingest.problem_trace,
benchmarks.sandbox), so a problem that allocates 100 GB, hangs, exits or attacks the machine costs nothing
but its own semantics. Problem files that are not regular files inside the checkout are refused unread.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import subprocess
from collections import Counter
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from benchmarks.naming import level_number, problem_name  # torch-free
from benchmarks.problem_constants import UnreadableConfiguration, static_configuration  # torch-free
from kernelindex.ingest.errors import IngestAborted, IngestFatal, InputProblem
from kernelindex.ingest.pipeline import Mode, Pipeline
from kernelindex.ingest.progress import Progress, say
from kernelindex.ingest.records import RECORD_FORMAT, RunRecord, check_record, parse_json_line
from kernelindex.ingest.summary import IngestSummary
from kernelindex.ingest.trace_cache import TraceCache, install_command, missing_module
from kernelindex.ingest.traces import ProblemTrace, ProblemTraceError, traced_with
from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot, workload_slug
from kernelindex.rules.identity import sha256_hex
from kernelindex.rules.providers import normalise_provider
from kernelindex.services.records import refresh_workloads

SOURCE_NAME = "KernelBench baseline timings"
SOURCE_URL = "https://github.com/ScalingIntelligence/KernelBench"
SOURCE_LICENCE = "MIT"
PROTOCOL = {
    "name": "KernelBench timing scripts", "version": "1", "timer": "cuda_events", "warmup": None,
    "trials": 100, "statistic": "mean", "l2_flush": None,
}
CONSTRAINTS = ["No mutation or aliasing"]

# baseline_time_<config>.json → implementation slug and how to describe it the first time.
TORCH_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

ALL_LEVELS = [1, 2, 3, 4]
TIMING_FILE = re.compile(r"^baseline_time_(.+)\.json$")
# A problem file is a small module; a bigger one is refused rather than read, stored and traced.
MAX_PROBLEM_BYTES = 1_000_000
# Problem numbers the importer accepts (upstream numbers from 1; the database column is int32).
PROBLEM_NUMBERS = range(1, 10_000)


def implementation_for_config(config: str) -> dict[str, Any] | None:
    base = {"framework": "PyTorch", "language": "python", "licence": "MIT", "source_availability": "mirrored",
            "source_url": SOURCE_URL, "install_recipe": None}
    if config == "torch":
        return {**base, "slug": "torch_eager", "title": "PyTorch eager", "runtime_id": "torch_eager", "role": "baseline"}
    if config == "torch_compile_cudagraphs":
        return {**base, "slug": "torch_compile_cudagraphs", "title": "torch.compile (cudagraphs)",
                "runtime_id": "torch_compile_cudagraphs", "role": "candidate", "compile_mode": "cudagraphs"}
    prefix = "torch_compile_inductor_"
    if config.startswith(prefix) and config[len(prefix):] in TORCH_COMPILE_MODES:
        mode = config[len(prefix):]
        slug = "torch_compile_inductor" if mode == "default" else f"torch_compile_inductor_{mode}"
        title = "torch.compile (inductor)" if mode == "default" else f"torch.compile (inductor, {mode})"
        return {**base, "slug": slug, "title": title, "runtime_id": slug, "role": "candidate", "compile_mode": mode}
    return None


def provider_for_folder(folder: str) -> str | None:
    """H100_PCIe_LambdaLabs → Lambda Labs; H100_Modal → Modal; X9_NewCloud → New Cloud (the folder's last
    part, its words apart, in the one spelling of rules.providers)."""
    last = folder.rsplit("_", 1)[-1] if "_" in folder else None
    if not last:
        return None
    return normalise_provider(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", last))


@dataclass
class ProblemFile:
    level: int
    number: int
    name: str
    path: Path
    data: bytes  # the file as upstream has it: its digest is the revision's identity
    source: str  # the same, as text (undecodable bytes replaced)

    @property
    def slug(self) -> str:
        return workload_slug("kernelbench", self.level, self.number, self.name)

    @cached_property
    def digest(self) -> str:
        """The revision's identity: the sha256 of the file's bytes (looked up, then stored)."""
        return sha256_hex(self.data)

    @property
    def key(self) -> tuple[int, str]:
        return (self.level, self.path.name)


# Why an entry was skipped: each reason is a line of the summary with its count.
SKIP_NO_PROBLEM_FILE = "no problem file at this revision"
SKIP_LEVEL_NOT_IMPORTED = "level not imported (--levels)"
SKIP_UNKNOWN_CONFIGURATION = "timing file of an unknown configuration"
SKIP_NO_SEMANTICS = ("problem whose configuration is unknown (its trace failed and its constants cannot be read "
                     "without running it)")
NO_TIMING_REASON = "the source recorded no timing"


def discover_problems(root: Path, levels: list[int], refused: list[InputProblem] | None = None) -> list[ProblemFile]:
    """The problem files of the levels asked for, named by the rule the runner uses (benchmarks.naming).

    A file that is not a regular file inside the checkout (a symbolic link, wherever it points; a FIFO;
    a device), is larger than MAX_PROBLEM_BYTES or has a number outside PROBLEM_NUMBERS is not read:
    it goes to ``refused`` with its path and the reason, and the others go on."""
    root = root.resolve()
    refused = refused if refused is not None else []
    problems = []
    for level in levels:
        folder = root / "KernelBench" / f"level{level}"
        if not folder.is_dir():
            continue
        if not folder.resolve().is_relative_to(root):
            refused.append(InputProblem(str(folder.relative_to(root)), "file", "the level folder leads outside the checkout"))
            continue
        for path in sorted(folder.glob("*.py")):
            name = problem_name(path)
            if name is None:
                continue
            label = str(path.relative_to(root))
            if name.number not in PROBLEM_NUMBERS:
                reason: str | None = f"problem number {name.number} is outside {PROBLEM_NUMBERS.start}..{PROBLEM_NUMBERS.stop - 1}"
                data = b""
            else:
                data, reason = read_problem_file(path, root)
            if reason is not None:
                refused.append(InputProblem(label, "file", reason))
                continue
            # The text as read_text gave it before: undecodable bytes replaced, newlines universal.
            text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
            problems.append(ProblemFile(name.level, name.number, name.name, path, data, text))
    return sorted(problems, key=lambda p: (p.level, p.number))


def read_problem_file(path: Path, root: Path) -> tuple[bytes, str | None]:
    """(bytes, None) for a regular file inside root of at most MAX_PROBLEM_BYTES; (b"", why) otherwise.
    Opened without following a link and without blocking (a FIFO), then checked again on the open file,
    so a file swapped between the check and the read is refused too."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return b"", f"cannot be read: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode):
        return b"", "a symbolic link (a problem file must be a regular file inside the checkout)"
    if not stat.S_ISREG(info.st_mode):
        return b"", f"not a regular file ({_file_kind(info.st_mode)})"
    if not path.resolve().is_relative_to(root):
        return b"", "outside the checkout"
    if info.st_size > MAX_PROBLEM_BYTES:
        return b"", f"{info.st_size:,} bytes, over the {MAX_PROBLEM_BYTES:,}-byte limit"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return b"", f"cannot be read: {exc.strerror}"
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            return b"", "changed while being read"
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_PROBLEM_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_PROBLEM_BYTES:
        return b"", f"over the {MAX_PROBLEM_BYTES:,}-byte limit"
    return data, None


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a plain file"


def _file_hardware(data: dict[str, Any]) -> str | None:
    """The hardware most of a timing file's entries name (ties: the first named), or None."""
    named: Counter[str] = Counter()
    for entries in data.values():
        if isinstance(entries, dict):
            named.update(e["hardware"] for e in entries.values() if isinstance(e, dict) and isinstance(e.get("hardware"), str) and e["hardware"])
    return named.most_common(1)[0][0] if named else None


def folder_hardware(folder: str) -> str:
    """The hardware a timing folder names: H100 for H100_Modal, H100 for H100_PCIe_LambdaLabs (its first
    part), the whole name when it has no provider part."""
    return folder.split("_", 1)[0]


def hardware_agrees(entry_hardware: str, folder: str) -> bool:
    """Whether an entry's own hardware name ("NVIDIA H100 80GB HBM3") contains the model its folder
    names ("H100"), as a word."""
    model = folder_hardware(folder).upper()
    return model in re.split(r"[\s_/,()-]+", entry_hardware.upper())


def discover_timing_files(root: Path) -> list[tuple[Path, str, str]]:
    """(file, hardware folder, config) for results/timing/<HARDWARE_DIR>/baseline_time_<config>.json."""
    found = []
    timing_root = root / "results" / "timing"
    if timing_root.is_dir():
        for path in sorted(timing_root.glob("*/baseline_time_*.json")):
            match = TIMING_FILE.match(path.name)
            if match:
                found.append((path, path.parent.name, match.group(1)))
    return found


def _git(root: Path, *args: str) -> str | None:
    """git's answer about root, or None when git is missing or root is not inside a work tree."""
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def git_revision(root: Path) -> tuple[str, str] | None:
    """(short commit, commit date) when root is the top level of a git checkout. A folder that merely lies
    inside some other repository (a snapshot kept in a project's tree) is not a checkout of KernelBench:
    the enclosing repository's HEAD says nothing about the suite's revision."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() != root.resolve():
        return None
    out = (_git(root, "log", "-1", "--format=%h %cs", "--abbrev=7") or "").split()
    return (out[0], out[1]) if len(out) == 2 else None


def enclosing_repository(root: Path) -> str | None:
    """The top level of the git repository root lies inside, when root is not that top level itself."""
    top = _git(root, "rev-parse", "--show-toplevel")
    return top if top and Path(top).resolve() != root.resolve() else None


def workload_spec(
    problem: ProblemFile, trace: ProblemTrace | ProblemTraceError, revision: str, traced_with: str | None = None
) -> WorkloadSpec:
    # The revision's identity is the digest of the file's bytes (the text may have been decoded with replacements).
    data = problem.data
    spec = WorkloadSpec(
        suite="kernelbench", level=problem.level, problem_number=problem.number, name=problem.name,
        reference_source=problem.source, source_filename=problem.path.name, upstream_revision=revision,
        source_sha256=problem.digest, source_size=len(data),
    )
    if isinstance(trace, ProblemTraceError):
        # No semantics without a trace; the configuration its timings were measured at is still the one its
        # source states, read from its constants as written (benchmarks.problem_constants), never guessed.
        # Where even that cannot be read, the configuration stays unknown and no run is stored against it.
        spec.semantics_error = untraced_words(trace)
        try:
            stated = static_configuration(problem.source)
        except UnreadableConfiguration:
            return spec
        spec.canonical_bindings = dict(stated.bindings)
        spec.canonical_dtype = stated.dtype
        return spec

    def tensor(entry: dict[str, Any]) -> dict[str, Any]:
        return {"name": entry["name"], "dtype": entry["dtype"], "shape": entry["shape"]}

    spec.canonical_bindings = dict(trace.bindings)
    spec.canonical_dtype = trace.dtype
    spec.semantics = {
        "inputs": [tensor(t) for t in trace.inputs],
        "outputs": [tensor(t) for t in trace.outputs],
        "axes": [{"name": name, "behaviour": "variable"} for name in sorted(trace.bindings)],
        "determinism": "unspecified",
        "constraints": CONSTRAINTS,
    }
    spec.analysis = trace.to_json()
    spec.traced_with = traced_with
    return spec


def untraced_words(trace: ProblemTraceError) -> str:
    """Why a workload has no semantics, as its page says it: the stage and cause, and for a module the
    importer's environment lacks, the command that would let it trace."""
    module = missing_module(trace)
    hint = f" ({install_command([module])} where the importer runs, then import again)" if module else ""
    return f"{trace.stage}: {trace.message}{hint}"


def timing_record(
    entry: dict[str, Any] | None, problem_slug: str, bindings: dict[str, int], dtype: str, folder: str,
    implementation: dict[str, Any], revision: str, observed: str, *, hardware: str | None = None,
) -> dict[str, Any]:
    """A timing-file entry in the run-record format (the seed's runs use exactly this shape). A null entry
    is the source saying it timed nothing there (the model failed): a failed run with that reason."""
    timed = entry is not None
    entry = entry or {}
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "workload": {"slug": problem_slug},
        "configuration": {"bindings": bindings, "dtype": dtype},
        "implementation": implementation,
        "environment": {
            "hardware": {"product_name": entry.get("hardware") or hardware or folder},
            "provider": provider_for_folder(folder),
            "label": folder,
            "software": {},
            "details": {"device": entry.get("device")} if entry.get("device") else {},
        },
        "protocol": dict(PROTOCOL, trials=entry.get("num_trials") if isinstance(entry.get("num_trials"), int) else None),
        "status": "passed" if timed else "failed",
        "statistics": {k: entry.get(k) for k in ("mean", "std", "min", "max", "num_trials")} if timed else None,
        "observed_at": f"{observed}T00:00:00Z",
        "evidence": "reported",
        "source": {"name": SOURCE_NAME, "url": SOURCE_URL, "licence": SOURCE_LICENCE, "revision": revision, "revision_date": observed},
    }
    if not timed:
        record["failure_reason"] = NO_TIMING_REASON
    return record


def read_timing_file(path: Path, label: str) -> tuple[dict[str, Any], list[InputProblem]]:
    try:
        data = parse_json_line(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return {}, [InputProblem(label, "file", f"not UTF-8 text: {exc.reason}")]
    except ValueError as exc:
        return {}, [InputProblem(label, "file", f"not valid JSON: {exc}")]
    if not isinstance(data, dict):
        return {}, [InputProblem(label, "file", "expected an object of levels")]
    return data, []


def timing_records(
    root: Path, problems: dict[tuple[int, str], tuple[ProblemFile, WorkloadSpec]], untraced: set[tuple[int, str]],
    levels: set[int], revision: str, observed: str, summary: IngestSummary,
) -> tuple[list[RunRecord], list[RunRecord], list[InputProblem]]:
    """Every entry of every timing file under root/results/timing counted found into `summary`, and each
    skipped or rejected one counted there too; the others come back to be written: (timed records,
    failed records for null entries, problems of the rejected entries). An entry
    is skipped, with its reason, when its level was not asked for, its problem file is not in the checkout,
    its problem has no semantics (a trace that failed or timed out: its configuration is unknown, so no
    run is stored at a guess, and the next import traces it again), or its file's configuration is unknown."""
    records: list[RunRecord] = []
    failed: list[RunRecord] = []
    rejected: list[InputProblem] = []
    # (file, entry hardware, folder) → entries: a contradiction is reported once per file and name, not per entry.
    disagreements: Counter[tuple[str, str, str]] = Counter()

    def reject(label: str, where: str, reasons: list[tuple[str | None, str]]) -> None:
        summary.rejected += 1
        rejected.extend(InputProblem(label, where, reason, key=key) for key, reason in reasons)

    for path, folder, config in discover_timing_files(root):
        label = str(path.relative_to(root))
        data, problems_here = read_timing_file(path, label)
        if problems_here:
            # A file that cannot be read has no entries to count: the file itself is the rejected input.
            summary.found += 1
            reject(label, "file", [(None, p.reason) for p in problems_here])
            continue
        implementation = implementation_for_config(config)
        # A null entry names no hardware: it ran where the file's timed entries ran (the folder's
        # name, "H100_Modal", is not a product name the catalogue knows).
        file_hardware = _file_hardware(data) or folder
        for level_name, entries in data.items():
            level = level_number(str(level_name))
            if level is None or not isinstance(entries, dict):
                summary.found += 1
                reject(label, str(level_name), [(None, "expected 'levelN' mapping problem files to timings")])
                continue
            for filename, entry in entries.items():
                summary.found += 1
                where = f"{level_name}/{filename}"
                if implementation is None:
                    summary.skip(f"{SKIP_UNKNOWN_CONFIGURATION} ({config})", f"{label}: {where}")
                    continue
                if level not in levels:
                    summary.skip(SKIP_LEVEL_NOT_IMPORTED, f"{label}: {where}")
                    continue
                found = problems.get((level, filename))
                if found is None:
                    summary.skip(SKIP_NO_PROBLEM_FILE, f"{label}: {where}")
                    continue
                if (level, filename) in untraced:
                    summary.skip(SKIP_NO_SEMANTICS, f"{label}: {where}")
                    continue
                if entry is not None and not isinstance(entry, dict):
                    reject(label, where, [(None, "expected an object with mean, std, min, max, num_trials, or null")])
                    continue
                problem, spec = found
                named = entry.get("hardware") if entry is not None else None
                if isinstance(named, str) and named and not hardware_agrees(named, folder):
                    disagreements[(label, named, folder)] += 1
                record = timing_record(
                    entry, problem.slug, spec.canonical_bindings or {}, spec.canonical_dtype, folder,
                    implementation, revision, observed, hardware=file_hardware,
                )
                reasons = check_record(record)
                if reasons:
                    reject(label, where, list(reasons))
                    continue
                (records if entry is not None else failed).append(RunRecord(record, label, where))
    for (label, named, folder), count in disagreements.items():
        contradiction = InputProblem(
            label, "entries", f"{count:,} entries say {named!r} but the folder {folder} says {folder_hardware(folder)}; "
            f"the entries' own hardware is used", key="hardware",
        )
        summary.contradictions.append(contradiction)
        summary.warnings.append(str(contradiction))
    return records, failed, rejected


@dataclass(frozen=True)
class Checkout:
    """Which KernelBench is imported: the folder, the upstream revision and when its timings were observed,
    and where those two came from (the summary and every dry run state all of it)."""

    root: Path
    revision: str
    observed: str
    revision_from: str  # "--revision and --observed", "git HEAD of PATH", or a mix of the two

    def describe(self) -> str:
        return (f"{SOURCE_NAME} ({SOURCE_URL}) at revision {self.revision}, observed {self.observed} "
                f"(from {self.revision_from})")


def _listing(root: Path, limit: int = 6) -> str:
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir())
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not names:
        return "an empty folder"
    more = f", … ({len(names) - limit:,} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def check_layout(root: Path, levels: list[int]) -> None:
    """IngestFatal unless root is a KernelBench checkout (its KernelBench/levelN folders) and the levels asked
    for are KernelBench's and present there: a wrong folder or a filter that matches nothing would otherwise
    be an import of nothing that exits 0."""
    if not root.exists():
        raise IngestFatal(f"{root}: no such folder")
    if not root.is_dir():
        raise IngestFatal(f"{root}: not a folder; expected a KernelBench checkout (a folder holding KernelBench/level1 … level4)")
    unknown = [level for level in levels if level not in ALL_LEVELS]
    if unknown:
        raise IngestFatal(
            f"--levels {','.join(map(str, unknown))}: KernelBench has levels {', '.join(map(str, ALL_LEVELS))}"
        )
    present = [level for level in ALL_LEVELS if (root / "KernelBench" / f"level{level}").is_dir()]
    if not present:
        if any((root / f"level{level}").is_dir() for level in ALL_LEVELS):
            raise IngestFatal(
                f"{root}: this is the KernelBench/ folder inside a checkout; pass the checkout itself: {root.parent}"
            )
        raise IngestFatal(
            f"{root}: not a KernelBench checkout: expected KernelBench/level1 … level4 (and results/timing/), "
            f"found {_listing(root)}"
        )
    if not set(levels) & set(present):
        raise IngestFatal(
            f"--levels {','.join(map(str, levels))}: none of them is in {root} (it has "
            f"{', '.join(f'level{level}' for level in present)})"
        )


def resolve_checkout(root: Path, revision: str | None, observed: str | None, levels: list[int]) -> Checkout:
    """The checkout to import: its layout checked, its revision and date from the flags, or from git only
    when root is the top level of a git checkout; otherwise both flags are required."""
    root = root.resolve()
    check_layout(root, levels)
    git = git_revision(root) if not (revision and observed) else None
    if (not revision or not observed) and git is None:
        inside = enclosing_repository(root)
        where = (f"it lies inside the git repository at {inside}, whose commit is not KernelBench's" if inside
                 else "it is not a git checkout")
        missing = " and ".join(flag for flag, value in (("--revision", revision), ("--observed", observed)) if not value)
        raise IngestFatal(f"{root}: {where}: pass {missing} (e.g. --revision 423217d --observed 2026-03-05)")
    if observed is not None:
        try:
            date.fromisoformat(observed)
        except ValueError:
            raise IngestFatal(f"--observed: not a date (YYYY-MM-DD): {observed!r}") from None
    if revision and observed:
        return Checkout(root, revision, observed, "--revision and --observed")
    assert git is not None  # refused above otherwise
    revision_from = " and ".join([
        "--revision" if revision else "git HEAD of PATH",
        "--observed" if observed else "the date of git HEAD",
    ])
    return Checkout(root, revision or git[0], observed or git[1], revision_from)


def import_kernelbench(
    database_url: str, root: Path, *, revision: str | None = None, observed: str | None = None,
    levels: list[int] | None = None, strict: bool = False, dry_run: bool = False, batch_size: int = 5000,
    timeout_s: float = 60.0, progress: bool = True,
) -> IngestSummary:
    """Import a checkout: its problems traced (each file once, ever: kernelindex.ingest.trace_cache), then
    workloads, revisions and timing runs written. Blocking: the tracing runs in the calling (main) thread,
    so Ctrl+C stops it at once with every finished trace kept; the writing runs in its own event loop."""
    checkout = resolve_checkout(root, revision, observed, levels or ALL_LEVELS)
    summary = IngestSummary(unit="timing entries", imported=checkout.describe(), catalogue=True, traced=True)
    problems = discover_problems(checkout.root, levels or ALL_LEVELS, summary.refused_files)
    if summary.refused_files and strict:
        raise IngestAborted(summary.refused_files)
    tracer = traced_with()
    traces = _traced(database_url, problems, tracer, summary, timeout_s=timeout_s, dry_run=dry_run, progress=progress)
    return asyncio.run(_write_checkout(
        database_url, checkout, problems, traces, tracer, summary, levels=levels or ALL_LEVELS, strict=strict,
        dry_run=dry_run, batch_size=batch_size, progress=progress,
    ))


def _traced(
    database_url: str, problems: list[ProblemFile], tracer: str, summary: IngestSummary, *,
    timeout_s: float, dry_run: bool, progress: bool,
) -> list[ProblemTrace | ProblemTraceError]:
    """Each problem's trace: kept from an earlier import (by file digest and tracer), or traced now in the
    sandbox, each result kept the moment it is final."""
    with TraceCache(database_url, dry_run=dry_run) as cache:
        kept = cache.lookup({p.digest: p.path.name for p in problems}, tracer)
        traces: list[ProblemTrace | ProblemTraceError | None] = [kept.get(p.digest) for p in problems]
        to_trace = [i for i, trace in enumerate(traces) if trace is None]
        summary.traces_reused = len(problems) - len(to_trace)
        summary.traces_fresh = len(to_trace)
        reused = f" ({summary.traces_reused} unchanged since they were last traced: their traces reused)" if summary.traces_reused else ""
        if progress:
            for refusal in summary.refused_files:
                say(f"refused problem file {refusal}")
            if not to_trace:
                say(f"tracing 0 problems on the meta device{reused}")
        if to_trace:
            # torch (about 2 s to import) is loaded only when something is to be traced.
            from kernelindex.ingest.problem_trace import available_cores, trace_problems_isolated

            def keep(position: int, trace: ProblemTrace | ProblemTraceError) -> None:
                problem = problems[to_trace[position]]
                traces[to_trace[position]] = trace
                cache.keep(problem.digest, tracer, trace)

            workers = min(available_cores(), len(to_trace))
            if progress:
                say(f"tracing {len(to_trace)} problems on the meta device{reused}, {workers} at a time")
            bar = Progress("tracing problems", total=len(to_trace)) if progress else None
            try:
                # The sandbox level is named whether or not progress is shown: what untrusted code could do matters.
                fresh = trace_problems_isolated(
                    [(problems[i].source, problems[i].path.name) for i in to_trace], timeout_s, workers,
                    report=say, on_traced=bar.advance_one if bar else None, on_result=keep,
                )
            finally:
                if bar:
                    bar.close()
            for i, result in zip(to_trace, fresh):
                traces[i] = result
    out: list[ProblemTrace | ProblemTraceError] = []
    for found in traces:
        assert found is not None  # kept, or traced just now
        out.append(found)
    return out


async def _write_checkout(
    database_url: str, checkout: Checkout, problems: list[ProblemFile], traces: list[ProblemTrace | ProblemTraceError],
    tracer: str, summary: IngestSummary, *, levels: list[int], strict: bool, dry_run: bool, batch_size: int,
    progress: bool,
) -> IngestSummary:
    root, upstream_revision, observed_date = checkout.root, checkout.revision, checkout.observed
    specs = []
    for problem, trace in zip(problems, traces):
        spec = workload_spec(problem, trace, upstream_revision, tracer)
        if isinstance(trace, ProblemTraceError):
            where = f"level{problem.level}/{problem.path.name}"
            summary.untraced.append(f"{where}: {trace.stage}: {trace.message}")
            if (module := missing_module(trace)) is not None:
                summary.missing_modules.add(module)
            if spec.canonical_bindings is not None:
                summary.configured_from_constants.append(where)
            else:
                summary.unconfigured.append(where)
        specs.append((problem, spec))
    by_key = {p.key: (p, spec) for p, spec in specs}

    # Timing entries → run records, validated before anything is written. A problem whose trace failed keeps
    # its timings at the configuration its constants state; only one whose configuration is unknown skips them.
    untraced = {p.key for p, spec in specs if spec.canonical_bindings is None}
    records, failed_records, input_problems = timing_records(
        root, by_key, untraced, set(levels), upstream_revision, observed_date, summary
    )
    mode = Mode.of(strict=strict, dry_run=dry_run)

    async def apply_snapshot(session: AsyncSession) -> None:
        # The checkout is one upstream snapshot (complete when every level was read): the snapshots,
        # not the order of imports, decide each workload's current revision.
        snapshot = await record_snapshot(
            session, "kernelbench", upstream_revision, date.fromisoformat(observed_date),
            [spec for _, spec in specs], complete=set(levels) >= set(ALL_LEVELS),
        )
        summary.changes = [change.words for change in snapshot.changes]
        inserted, new, unchanged = snapshot.tally()
        summary.workloads_inserted += inserted
        summary.workloads_new_revision += new
        summary.workloads_unchanged += unchanged
        if mode is not Mode.DRY_RUN:
            # A new revision changes which runs are eligible: recompute those workloads' records.
            await refresh_workloads(session, snapshot.changed_workload_ids)

    # The pipeline's unit of work holds the snapshot too: --strict writes nothing (the snapshot, the
    # batches) when any entry anywhere has a problem; --dry-run writes nothing at all.
    total = len(records) + len(failed_records)
    async with Pipeline.open(
        database_url, mode, summary, batch_size=batch_size, track_keys=False,
        progress=("ingest timings", total) if progress and mode is not Mode.DRY_RUN else None,
    ) as pipeline:
        await pipeline.catalogue(apply_snapshot)
        # The entries were counted found (and rejected) as they were read; their problems are told
        # before the writer's, in the order they were found.
        summary.add_problems(input_problems)
        # A null entry's run is a failed entry.
        await pipeline.write(records, counted=True, advance=True)
        await pipeline.write(failed_records, counted=True, failed=True, advance=True)
        await pipeline.finish()
    _notes(summary)
    return summary.check()  # every entry in exactly one outcome


def _notes(summary: IngestSummary) -> None:
    """What the import says before its table: upstream's changes and the problems imported untraced."""
    summary.notes += [f"upstream {change}" for change in summary.changes]
    summary.notes += [f"imported without semantics: {line}" for line in summary.untraced]
    if summary.missing_modules:
        summary.notes.append(
            f"{len(summary.untraced):,} problems could not be traced; to trace those missing a module, run "
            f"`{install_command(summary.missing_modules)}` where the importer runs, then import again"
        )
    summary.notes += [f"timings skipped for {where}: its configuration cannot be read without running it"
                      for where in summary.unconfigured]
