"""`kernelindex ingest kernelbench PATH`: every problem of a KernelBench checkout as a workload, and
every baseline timing file as reported runs.

Problems are traced on the meta device in child processes (kernelindex.ingest.problem_trace), so a
problem that allocates 100 GB, hangs or exits costs nothing but its own semantics.
"""

from __future__ import annotations

import ast
import asyncio
import re
import subprocess
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.ingest.errors import IngestAborted, InputProblem
from kernelindex.ingest.progress import Progress, say
from kernelindex.ingest.records import RECORD_FORMAT, RunRecord, check_record, parse_json_line
from kernelindex.ingest.workloads import WorkloadSpec, upsert_workload, workload_slug
from kernelindex.ingest.writer import IngestSummary, RunWriter
from kernelindex.services.records import refresh_workloads

if TYPE_CHECKING:
    from kernelindex.ingest.problem_trace import ProblemTrace, ProblemTraceError

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
PROVIDER_NAMES = {"LambdaLabs": "Lambda Labs", "Modal": "Modal", "Lambda": "Lambda Labs", "AWS": "AWS", "GCP": "Google Cloud"}

PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")
TIMING_FILE = re.compile(r"^baseline_time_(.+)\.json$")


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
    """H100_PCIe_LambdaLabs → Lambda Labs; H100_Modal → Modal."""
    last = folder.rsplit("_", 1)[-1] if "_" in folder else None
    if not last:
        return None
    return PROVIDER_NAMES.get(last, re.sub(r"(?<=[a-z])(?=[A-Z])", " ", last))


@dataclass
class ProblemFile:
    level: int
    number: int
    name: str
    path: Path
    source: str

    @property
    def slug(self) -> str:
        return workload_slug("kernelbench", self.level, self.number, self.name)

    @property
    def key(self) -> tuple[int, str]:
        return (self.level, self.path.name)


@dataclass
class KernelBenchSummary:
    workloads_inserted: int = 0
    workloads_new_revision: int = 0
    workloads_unchanged: int = 0
    untraced: list[str] = field(default_factory=list)
    timing_entries: int = 0
    skipped_missing_problem: int = 0
    runs: IngestSummary = field(default_factory=IngestSummary)

    def table(self) -> list[tuple[str, int]]:
        return [
            ("workloads inserted", self.workloads_inserted),
            ("workloads with a new revision", self.workloads_new_revision),
            ("workloads unchanged", self.workloads_unchanged),
            ("workloads without semantics", len(self.untraced)),
            ("timing entries", self.timing_entries),
            ("entries skipped (no problem file)", self.skipped_missing_problem),
        ] + self.runs.table()


def discover_problems(root: Path, levels: list[int]) -> list[ProblemFile]:
    problems = []
    for level in levels:
        folder = root / "KernelBench" / f"level{level}"
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.py")):
            match = PROBLEM_FILE.match(path.name)
            if match:
                problems.append(
                    ProblemFile(level, int(match.group(1)), match.group(2), path, path.read_text(encoding="utf-8", errors="replace"))
                )
    return sorted(problems, key=lambda p: (p.level, p.number))


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


def git_revision(root: Path) -> tuple[str, str] | None:
    """(short commit, commit date) when root is a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--format=%h %cs", "--abbrev=7"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return (out[0], out[1]) if len(out) == 2 else None


def literal_int_constants(source: str) -> dict[str, int]:
    """Module-level `name = <int>` assignments, read without running the module."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                constants[node.targets[0].id] = node.value.value
    return constants


def workload_spec(problem: ProblemFile, trace: ProblemTrace | ProblemTraceError, revision: str) -> WorkloadSpec:
    from kernelindex.ingest.problem_trace import ProblemTraceError  # torch: loaded only when a checkout is imported

    spec = WorkloadSpec(
        suite="kernelbench", level=problem.level, problem_number=problem.number, name=problem.name,
        reference_source=problem.source, source_filename=problem.path.name, upstream_revision=revision,
    )
    if isinstance(trace, ProblemTraceError):
        spec.semantics_error = f"{trace.stage}: {trace.message}"
        constants = literal_int_constants(problem.source)
        spec.canonical_bindings = {"batch_size": constants["batch_size"]} if "batch_size" in constants else {}
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
    return spec


def timing_record(
    entry: dict[str, Any], problem_slug: str, bindings: dict[str, int], dtype: str, folder: str,
    implementation: dict[str, Any], revision: str, observed: str,
) -> dict[str, Any]:
    """A timing-file entry in the run-record format (the seed's runs use exactly this shape)."""
    return {
        "format": RECORD_FORMAT,
        "workload": {"slug": problem_slug},
        "configuration": {"bindings": bindings, "dtype": dtype},
        "implementation": implementation,
        "environment": {
            "hardware": {"product_name": entry.get("hardware") or folder},
            "provider": provider_for_folder(folder),
            "label": folder,
            "software": {},
            "details": {"device": entry.get("device")} if entry.get("device") else {},
        },
        "protocol": dict(PROTOCOL, trials=entry.get("num_trials") if isinstance(entry.get("num_trials"), int) else None),
        "status": "passed",
        "statistics": {k: entry.get(k) for k in ("mean", "std", "min", "max", "num_trials")},
        "observed_at": f"{observed}T00:00:00Z",
        "evidence": "reported",
        "source": {"name": SOURCE_NAME, "url": SOURCE_URL, "licence": SOURCE_LICENCE, "revision": revision, "revision_date": observed},
    }


def read_timing_file(path: Path, label: str) -> tuple[dict[str, dict[str, dict[str, Any]]], list[InputProblem]]:
    try:
        data = parse_json_line(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return {}, [InputProblem(label, "file", f"not UTF-8 text: {exc.reason}")]
    except ValueError as exc:
        return {}, [InputProblem(label, "file", f"not valid JSON: {exc}")]
    if not isinstance(data, dict):
        return {}, [InputProblem(label, "file", "expected an object of levels")]
    return data, []


def _checkout(root: Path, revision: str | None, observed: str | None) -> tuple[Path, str, str]:
    """(resolved root, revision, observed date) of a KernelBench checkout, from git unless given."""
    root = root.resolve()
    if not root.is_dir():
        raise IngestAborted([InputProblem(str(root), "path", "not a directory")])
    git = git_revision(root)
    revision = revision or (git[0] if git else None)
    observed = observed or (git[1] if git else None)
    if not revision or not observed:
        raise IngestAborted([InputProblem(str(root), "path", "not a git checkout: pass --revision and --observed")])
    try:
        date.fromisoformat(observed)
    except ValueError:
        raise IngestAborted([InputProblem(str(root), "--observed", f"not a date (YYYY-MM-DD): {observed!r}")]) from None
    return root, revision, observed


async def import_kernelbench(
    database_url: str, root: Path, *, revision: str | None = None, observed: str | None = None,
    levels: list[int] | None = None, strict: bool = False, dry_run: bool = False, batch_size: int = 5000,
    timeout_s: float = 60.0, progress: bool = True,
) -> KernelBenchSummary:
    from kernelindex.ingest.problem_trace import (  # torch: loaded only when a checkout is imported
        ProblemTraceError,
        trace_problems_isolated,
    )

    # File system and git calls block: off the event loop.
    root, upstream_revision, observed_date = await asyncio.to_thread(_checkout, root, revision, observed)

    summary = KernelBenchSummary()
    problems = discover_problems(root, levels or [1, 2, 3, 4])
    if progress:
        say(f"tracing {len(problems)} problems on the meta device")
    traces = await asyncio.to_thread(
        trace_problems_isolated, [(p.source, p.path.name) for p in problems], timeout_s
    ) if problems else []

    specs = []
    for problem, trace in zip(problems, traces):
        spec = workload_spec(problem, trace, upstream_revision)
        if isinstance(trace, ProblemTraceError):
            summary.untraced.append(f"level{problem.level}/{problem.path.name}: {trace.stage}: {trace.message}")
        specs.append((problem, spec))
    by_key = {p.key: (p, spec) for p, spec in specs}

    # Timing entries → run records, validated before anything is written.
    records: list[RunRecord] = []
    input_problems: list[InputProblem] = []
    for path, folder, config in discover_timing_files(root):
        label = str(path.relative_to(root))
        implementation = implementation_for_config(config)
        if implementation is None:
            input_problems.append(InputProblem(label, "file name", f"unknown timing configuration {config!r}"))
            continue
        data, problems_here = read_timing_file(path, label)
        input_problems += problems_here
        for level_name, entries in data.items():
            match = re.fullmatch(r"level(\d+)", str(level_name))
            if not match or not isinstance(entries, dict):
                input_problems.append(InputProblem(label, str(level_name), "expected 'levelN' mapping problem files to timings"))
                continue
            for filename, entry in entries.items():
                summary.timing_entries += 1
                where = f"{level_name}/{filename}"
                found = by_key.get((int(match.group(1)), filename))
                if found is None:
                    summary.skipped_missing_problem += 1
                    summary.runs.warnings.append(f"{label}: {where}: no such problem file at revision {upstream_revision}; skipped")
                    continue
                problem, spec = found
                if not isinstance(entry, dict):
                    input_problems.append(InputProblem(label, where, "expected an object with mean, std, min, max, num_trials"))
                    continue
                record = timing_record(
                    entry, problem.slug, spec.canonical_bindings or {}, spec.canonical_dtype, folder,
                    implementation, upstream_revision, observed_date,
                )
                found_problems = check_record(record)
                if found_problems:
                    for key, reason in found_problems:
                        input_problems.append(InputProblem(label, where, reason, key=key))
                    continue
                records.append(RunRecord(record, label, where))
    if input_problems and strict:
        raise IngestAborted(input_problems)

    engine = make_engine(database_url, pool_size=2, max_overflow=0)
    sessionmaker = make_sessionmaker(engine)
    try:
        async with sessionmaker() as session:
            try:
                touched = []
                for _, spec in specs:
                    outcome = await upsert_workload(session, spec)
                    touched.append(outcome.workload_id)
                    if outcome.status == "inserted":
                        summary.workloads_inserted += 1
                    elif outcome.status == "new revision":
                        summary.workloads_new_revision += 1
                    else:
                        summary.workloads_unchanged += 1
                if dry_run:
                    part = await RunWriter(session).write(records, dry_run=True)
                    summary.runs.merge(part)
                    await session.rollback()
                else:
                    # A new revision changes which runs are eligible: recompute those workloads' records.
                    await refresh_workloads(session, touched)
                    await session.commit()
            except BaseException:
                await session.rollback()
                raise
        if not dry_run:
            bar = Progress("ingest timings", total=len(records)) if progress else None
            for start in range(0, len(records), batch_size):
                batch = records[start:start + batch_size]
                async with sessionmaker() as session:
                    try:
                        part = await RunWriter(session).write(batch)
                        if part.problems and strict:
                            raise IngestAborted(part.problems)
                        await session.commit()
                    except BaseException:
                        await session.rollback()
                        raise
                summary.runs.merge(part)
                if bar:
                    bar.advance(len(batch))
            if bar:
                bar.close()
    finally:
        await engine.dispose()
    summary.runs.problems = input_problems + summary.runs.problems
    summary.runs.rejected = len({(p.file, p.where) for p in summary.runs.problems})
    return summary


