"""Reading and validating run records (schemas/run-record.schema.json), one JSON object per line."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from kernelindex.ingest.errors import InputProblem

SCHEMA_PATH = Path(__file__).resolve().parent.parent.parent / "schemas" / "run-record.schema.json"
RECORD_FORMAT = "kernelindex.run/1"


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError(f"duplicate key {k!r}")
        seen[k] = v
    return seen


def parse_json_line(text: str) -> Any:
    """Strict JSON: NaN, ±Infinity and duplicate keys are errors."""
    return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicate_keys)


@dataclass(frozen=True)
class RunRecord:
    """A validated record; `where` locates it in its input."""

    data: dict[str, Any]
    file: str
    where: str

    @property
    def observed_at(self) -> datetime:
        value = datetime.fromisoformat(self.data["observed_at"].replace("Z", "+00:00"))
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _json_path(path: Iterable[Any]) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(record)"


def check_record(data: Any) -> list[tuple[str | None, str]]:
    """(key, reason) for everything wrong with one record; empty when it is valid."""
    if not isinstance(data, dict):
        return [(None, f"expected a JSON object, got {type(data).__name__}")]
    problems: list[tuple[str | None, str]] = []
    for error in sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path)):
        problems.append((_json_path(error.absolute_path), error.message))
    if problems:
        return problems
    stats = data.get("statistics")
    if data["status"] == "passed":
        if not stats:
            problems.append(("statistics", "a passed run needs statistics"))
    elif not data.get("failure_reason"):
        problems.append(("failure_reason", "a failed run needs a failure_reason"))
    if stats:
        mean = stats["mean"]
        for key in ("min", "max", "median", "p5", "p95", "std"):
            value = stats.get(key)
            if value is not None and not math.isfinite(value):
                problems.append((f"statistics.{key}", "must be a finite number"))
        if stats.get("min") is not None and stats["min"] > mean:
            problems.append(("statistics.min", f"min {stats['min']} is above mean {mean}"))
        if stats.get("max") is not None and stats["max"] < mean:
            problems.append(("statistics.max", f"max {stats['max']} is below mean {mean}"))
        samples = data.get("samples_ms")
        if samples is not None and len(samples) != stats["num_trials"]:
            problems.append(("samples_ms", f"{len(samples)} samples for num_trials {stats['num_trials']}"))
    try:
        RunRecord(data, "", "").observed_at
    except ValueError:
        problems.append(("observed_at", f"not an ISO 8601 date-time: {data['observed_at']!r}"))
    revision_date = data["source"].get("revision_date")
    if revision_date:
        try:
            date.fromisoformat(revision_date)
        except ValueError:
            problems.append(("source.revision_date", f"not an ISO 8601 date: {revision_date!r}"))
    return problems


def read_run_records(stream: TextIO | Iterable[str], file: str) -> Iterator[RunRecord | InputProblem]:
    """Yield a RunRecord or an InputProblem per non-blank line, streaming (bounded memory)."""
    seen_any = False
    line_no = 0
    try:
        for line_no, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            seen_any = True
            where = f"line {line_no}"
            try:
                data = parse_json_line(line)
            except (ValueError, RecursionError) as exc:
                yield InputProblem(file, where, f"not valid JSON: {exc}")
                continue
            found = check_record(data)
            if found:
                for key, reason in found:
                    yield InputProblem(file, where, reason, key=key)
                continue
            yield RunRecord(data, file, where)
    except UnicodeDecodeError as exc:
        yield InputProblem(file, f"line {line_no + 1}", f"not UTF-8 text: {exc.reason} at byte {exc.start}")
        return
    if not seen_any:
        yield InputProblem(file, "line 1", "the file holds no run records (empty)")
