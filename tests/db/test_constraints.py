"""Bad data is refused by the database itself, whatever path it comes from."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from kernelindex.db.models import Run
from kernelindex.ingest.errors import IngestAborted
from kernelindex.ingest.seed import SEEDS_DIR, load_seed


async def _insert_copy_of_first_run(session, **changes) -> None:
    run = (await session.scalars(select(Run).order_by(Run.id).limit(1))).one()
    values = {c.key: getattr(run, c.key) for c in Run.__table__.columns if c.key not in ("id", "created_at")}
    values.update(configuration_key=values["configuration_key"] + "x", **changes)
    await session.execute(Run.__table__.insert().values(**values))


@pytest.mark.parametrize(
    "changes, constraint",
    [
        ({"mean_ms": -1.0, "min_ms": None, "max_ms": None}, "mean_finite_positive"),
        ({"mean_ms": 0.0, "min_ms": None, "max_ms": None}, "mean_finite_positive"),
        ({"mean_ms": math.nan, "min_ms": None, "max_ms": None}, "mean_finite_positive"),
        ({"mean_ms": math.inf, "min_ms": None, "max_ms": None}, "mean_finite_positive"),
        ({"mean_ms": -math.inf, "min_ms": None, "max_ms": None}, "mean_finite_positive"),
        ({"min_ms": math.nan}, "min_finite_positive"),
        ({"std_ms": math.inf}, "std_finite"),
        ({"std_ms": -0.1}, "std_finite"),
        ({"num_trials": 0}, "trials_at_least_one"),
        ({"min_ms": 5.0}, "min_not_above_mean"),
        ({"max_ms": 0.5}, "max_not_below_mean"),
        ({"status": "passed", "figure": None}, "passed_has_figure"),  # a figure, not a mean, since 0016
        ({"status": "failed", "failure_reason": None}, "failed_has_reason"),
        ({"evidence": "rumoured"}, "evidence_known"),
    ],
)
async def test_database_rejects_bad_runs(session, changes, constraint):
    with pytest.raises(IntegrityError) as excinfo:
        await _insert_copy_of_first_run(session, **changes)
    assert constraint in str(excinfo.value)


async def test_nan_is_greater_than_zero_in_postgresql(session):
    """Why the constraints say `< 'Infinity'` as well as `> 0`."""
    assert (await session.execute(text("SELECT 'NaN'::float8 > 0"))).scalar_one() is True


async def test_reseed_adds_no_duplicates(session):
    before = (await session.execute(select(func.count()).select_from(Run))).scalar_one()
    summary = await load_seed(session)
    after = (await session.execute(select(func.count()).select_from(Run))).scalar_one()
    assert before == after == 8
    assert summary.runs.inserted == 0 and summary.runs.unchanged == 8


def _seed_copy(tmp_path: Path) -> Path:
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS_DIR, target)
    return target


async def test_unknown_hardware_sku_in_seed_file(session, tmp_path):
    seeds = _seed_copy(tmp_path)
    lines = (seeds / "runs.jsonl").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["environment"]["hardware"] = {"sku": "NVIDIA Z9000 SXM"}
    bad["source"]["revision"] = "other"
    (seeds / "runs.jsonl").write_text("\n".join(lines + [json.dumps(bad)]) + "\n")
    with pytest.raises(IngestAborted) as excinfo:
        await load_seed(session, seeds)
    (problem,) = excinfo.value.problems
    assert "unknown hardware SKU 'NVIDIA Z9000 SXM'" in problem.reason
    assert problem.where == "line 9"
    assert problem.file.endswith("runs.jsonl")


@pytest.mark.parametrize(
    "field, value, reason",
    [
        ("mean", -1.39, "less than or equal to the minimum of 0"),
        ("num_trials", 0, "less than the minimum of 1"),
    ],
)
async def test_bad_statistics_in_seed_file(session, tmp_path, field, value, reason):
    seeds = _seed_copy(tmp_path)
    lines = (seeds / "runs.jsonl").read_text().splitlines()
    bad = json.loads(lines[2])
    bad["statistics"][field] = value
    lines[2] = json.dumps(bad)
    (seeds / "runs.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(IngestAborted) as excinfo:
        await load_seed(session, seeds)
    (problem,) = excinfo.value.problems
    assert problem.where == "line 3" and problem.key == f"statistics.{field}" and reason in problem.reason


async def test_nan_in_seed_file(session, tmp_path):
    seeds = _seed_copy(tmp_path)
    lines = (seeds / "runs.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"mean": 1.39', '"mean": NaN')
    (seeds / "runs.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(IngestAborted) as excinfo:
        await load_seed(session, seeds)
    assert "NaN is not a number JSON allows" in excinfo.value.problems[0].reason
