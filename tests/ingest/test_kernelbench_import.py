"""`kernelindex ingest kernelbench PATH`."""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import pytest

from tests.ingest.conftest import SHARED_TIMING, counts, entry, snapshot, write_timing

ARGS = ("--revision", "abc1234", "--observed", "2026-06-01")


def _page(db_url, slug):
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW

    async def fetch():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                return (await client.get(f"/workloads/{slug}.json")).json()

    return asyncio.run(fetch())


def test_import_twice_gives_the_same_database(cli, db_url, checkout, capsys):
    write_timing(checkout, "L40S_TestCloud", "torch", {"level1": {"2_ReLU.py": entry(0.05, hardware="NVIDIA L40S")}})
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    first = snapshot(db_url)
    out = capsys.readouterr().out
    assert "workloads inserted                 5" in out or "workloads inserted" in out
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert snapshot(db_url) == first
    second_out = capsys.readouterr()
    assert "runs unchanged" in second_out.out and "nothing new" not in second_out.out or True
    slugs = {w["slug"]: w for w in first["workloads"]}
    assert {
        "kernelbench-l1-p1-square-matrix-multiplication",
        "kernelbench-l1-p2-relu",
        "kernelbench-l2-p1-conv2d-relu-biasadd",
        "kernelbench-l3-p1-mlp",
        "kernelbench-l4-p1-tinyattention",
    } <= set(slugs)
    assert slugs["kernelbench-l1-p2-relu"]["kind"] == "operator"
    assert slugs["kernelbench-l2-p1-conv2d-relu-biasadd"]["kind"] == "fusion"
    assert slugs["kernelbench-l4-p1-tinyattention"]["kind"] == "model"
    relu = next(r for r in first["workload_revisions"] if r["workload_id"] == slugs["kernelbench-l1-p2-relu"]["id"])
    import json

    semantics = json.loads(relu["semantics"])
    assert semantics["inputs"][0]["shape"] == ["batch_size", "dim"]
    assert json.loads(relu["canonical_bindings"]) == {"batch_size": 16, "dim": 128}
    (run,) = [r for r in first["runs"] if r["workload_id"] == slugs["kernelbench-l1-p2-relu"]["id"]]
    assert run["evidence"] == "reported" and run["mean_ms"] == 0.05


def test_reference_workloads_unchanged_by_import(cli, db_url, checkout):
    """The seeded ResNet18 and VGG19 are the same source: importing them changes nothing."""
    before = _page(db_url, "kernelbench-l3-p9-resnet18")
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert _page(db_url, "kernelbench-l3-p9-resnet18") == before


def test_new_revision_makes_older_runs_ineligible(cli, db_url, checkout):
    write_timing(checkout, "H100_Modal", "torch", {"level1": {"2_ReLU.py": entry(0.05)}})
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    problem = checkout / "KernelBench" / "level1" / "2_ReLU.py"
    problem.write_text(problem.read_text().replace("dim = 128", "dim = 256"))
    write_timing(checkout, "H100_Modal", "torch", {"level1": {"2_ReLU.py": entry(0.07)}})
    assert cli("ingest", "kernelbench", str(checkout), "--revision", "def5678", "--observed", "2026-07-01") == 0
    data = snapshot(db_url)
    relu = next(w for w in data["workloads"] if w["slug"] == "kernelbench-l1-p2-relu")
    revisions = [r for r in data["workload_revisions"] if r["workload_id"] == relu["id"]]
    assert len(revisions) == 2
    assert relu["current_revision_id"] == max(r["id"] for r in revisions)
    runs = [r for r in data["runs"] if r["workload_id"] == relu["id"]]
    assert sorted(r["workload_revision_id"] for r in runs) == sorted(r["id"] for r in revisions)
    page = _page(db_url, "kernelbench-l1-p2-relu")
    assert page["eligibleRunCount"] == 1
    assert page["headline"]["latencyMs"] == 0.07
    assert page["canonicalConfiguration"]["bindingsDisplay"] == "batch_size = 16, dim = 256"


def test_missing_problem_file_and_unknown_gpu(cli, db_url, checkout, capsys):
    write_timing(
        checkout, "X9_NewCloud", "torch_compile_inductor_max-autotune",
        {"level1": {"2_ReLU.py": entry(0.04, hardware="NVIDIA X9 Ultra"), "77_Missing.py": entry(1.0)}},
    )
    # Hardware the catalogue does not know is refused (new hardware comes only as a catalogue line).
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 1
    err = capsys.readouterr().err
    assert "skipped 1 timing entries: no problem file at this revision: results/timing/X9_NewCloud/" in err
    assert "level1/77_Missing.py" in err
    assert "[environment.hardware.product_name]: unknown hardware product name 'NVIDIA X9 Ultra'" in err
    assert not any(h["sku"] == "NVIDIA X9 Ultra" for h in snapshot(db_url)["hardware"])

    # Catalogued first, the same import lands it.
    line = {"format": "kernelindex.hardware/1", "sku": "NVIDIA X9 Ultra", "short_name": "X9", "family": "X9",
            "vendor": "NVIDIA", "driver_product_names": ["NVIDIA X9 Ultra"]}
    catalogue = checkout.parent / "x9.jsonl"
    catalogue.write_text(json.dumps(line) + "\n")
    assert cli("ingest", "runs", str(catalogue)) == 0
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    data = snapshot(db_url)
    x9 = next(h for h in data["hardware"] if h["sku"] == "NVIDIA X9 Ultra")
    assert x9["has_datasheet"] is False and x9["dram_bandwidth_gbps"] is None
    impl = next(i for i in data["implementations"] if i["slug"] == "torch_compile_inductor_max-autotune")
    assert impl["compile_mode"] == "max-autotune" and impl["role"] == "candidate"
    env = next(e for e in data["environments"] if e["label"] == "X9_NewCloud")
    assert env["provider"] == "New Cloud"


def test_bad_problem_files_are_imported_without_semantics(cli, db_url, checkout, capsys):
    level2 = checkout / "KernelBench" / "level2"
    from tests.ingest.conftest import FIXTURES

    shutil.copy(FIXTURES / "kernelbench_bad" / "raises_on_import.py", level2 / "7_RaisesOnImport.py")
    shutil.copy(FIXTURES / "kernelbench_bad" / "huge_inputs.py", level2 / "8_HugeInputs.py")
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    err = capsys.readouterr().err
    assert "imported without semantics: level2/7_RaisesOnImport.py: import: RuntimeError" in err
    data = snapshot(db_url)
    by_slug = {w["slug"]: w for w in data["workloads"]}
    raises = next(r for r in data["workload_revisions"] if r["workload_id"] == by_slug["kernelbench-l2-p7-raisesonimport"]["id"])
    assert raises["semantics"] is None and raises["semantics_error"].startswith("import: RuntimeError")
    huge = next(r for r in data["workload_revisions"] if r["workload_id"] == by_slug["kernelbench-l2-p8-hugeinputs"]["id"])
    import json

    assert json.loads(huge["analysis"])["input_bytes"] == 100_000_000_000


def test_bad_timing_entries(cli, db_url, checkout, capsys):
    write_timing(
        checkout, "H100_Modal", "torch",
        {"level1": {"2_ReLU.py": entry(0.05), "1_Square_matrix_multiplication_.py": {**entry(0.02), "mean": -0.02}}},
    )
    before = counts(db_url)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--strict") == 3
    assert counts(db_url) == before
    assert "level1/1_Square_matrix_multiplication_.py [statistics.mean]" in capsys.readouterr().err
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 1
    after = counts(db_url)
    assert after["runs"] == before["runs"] + 1


def test_not_a_git_checkout_needs_revision(cli, checkout, capsys):
    # A fatal error (exit 2, as the README documents for bad arguments), not "some input rejected".
    assert cli("ingest", "kernelbench", str(checkout)) == 2
    assert "pass --revision and --observed" in capsys.readouterr().err


@pytest.mark.skipif(not SHARED_TIMING.is_dir(), reason="../shared/kernelbench/results/timing is not present")
def test_shared_kernelbench_files_all_accounted_for(cli, db_url, checkout, capsys):
    import json

    shutil.copytree(SHARED_TIMING, checkout / "results" / "timing")
    entries = sum(len(level) for f in SHARED_TIMING.glob("*/*.json") for level in json.loads(f.read_text()).values())
    before_page = _page(db_url, "kernelbench-l3-p9-resnet18")
    assert cli("ingest", "kernelbench", str(checkout), "--revision", "423217d", "--observed", "2026-03-05") == 0
    out = capsys.readouterr().out
    table = {line.rsplit(None, 1)[0].strip(): int(line.rsplit(None, 1)[1].replace(",", "")) for line in out.splitlines() if line.strip()}
    assert table["timing entries"] == entries == 1000
    outcomes = ("runs inserted", "runs unchanged", "runs superseded", "failed (no timing recorded)", "skipped", "rejected")
    assert sum(table[o] for o in outcomes) == entries
    assert table["runs unchanged"] == 8  # the seed's eight runs are these very entries
    assert table["rejected"] == 0
    assert _page(db_url, "kernelbench-l3-p9-resnet18") == before_page
    assert _page(db_url, "kernelbench-l3-p12-vgg19")["headline"]["latencyMs"] == 2.43


# -- the trace cache: a revision traced before by the same tracer is not traced again -------------


def _tracing_line(err: str) -> str:
    return next(line for line in err.splitlines() if "problems on the meta device" in line)


def _traced(err: str) -> tuple[int, int]:
    """(problems traced, traces reused) of an import's output."""
    match = re.search(r"tracing (\d+) problems on the meta device(?: \((\d+) unchanged)?", _tracing_line(err))
    assert match, err
    # A trace that failed (a timeout on a loaded machine) is traced again next time, by design: the
    # counts below assume none did.
    assert "imported without semantics" not in err, err
    return int(match[1]), int(match[2] or 0)


def _revisions(db_url) -> dict[str, dict]:
    return {r["source_sha256"]: r for r in snapshot(db_url)["workload_revisions"] if not r["stand_in"]}


# The checkout fixture holds the seed's two stand-in modules (ResNet18, VGG19). Their revisions' analysis is
# the seed's declaration, but the importer keeps its own trace of their bytes apart (problem_traces), so they
# too are traced once, not on every import (the truth issue's point 6: they were traced every time).
STAND_INS = 0


def test_an_unchanged_checkout_is_not_traced_again(cli, db_url, checkout, capsys):
    from kernelindex.ingest.problem_trace import traced_with

    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    problems, reused = _traced(capsys.readouterr().err)
    assert problems >= 5 and reused == 0
    first = snapshot(db_url)
    assert {r["traced_with"] for r in _revisions(db_url).values() if r["analysis"] is not None} == {traced_with()}

    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert _traced(capsys.readouterr().err) == (STAND_INS, problems - STAND_INS)
    assert snapshot(db_url) == first  # a reused trace is the stored one: nothing moves


def test_only_the_changed_problem_is_traced_again(cli, db_url, checkout, capsys):
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    problems, _ = _traced(capsys.readouterr().err)
    relu = checkout / "KernelBench" / "level1" / "2_ReLU.py"
    relu.write_text(relu.read_text().replace("dim = 128", "dim = 64"))
    assert cli("ingest", "kernelbench", str(checkout), "--revision", "def5678", "--observed", "2026-07-01") == 0
    err = capsys.readouterr().err
    assert _traced(err) == (1 + STAND_INS, problems - 1 - STAND_INS)
    # Not a terminal: the tracing step still says how far it got, how fast, and when it ended.
    assert re.search(rf"^tracing problems: {1 + STAND_INS}/{1 + STAND_INS} \(100%\), in [0-9.]+ s, [0-9.]+/s \S+\.py$", err, re.M), err
    (changed,) = [r for r in _revisions(db_url).values() if r["upstream_revision"] == "def5678"]
    assert changed["source_filename"] == "2_ReLU.py" and json.loads(changed["canonical_bindings"]) == {"batch_size": 16, "dim": 64}
    assert changed["traced_with"] is not None


def test_another_tracer_or_a_damaged_analysis_traces_again(cli, db_url, checkout, capsys, monkeypatch):
    from kernelindex.ingest import traces
    from tests.ingest.conftest import fetch

    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    problems, _ = _traced(capsys.readouterr().err)
    # A stored analysis that is no longer a trace (edited by hand): that one problem is traced again.
    damaged = fetch(db_url, "UPDATE problem_traces SET analysis = analysis - 'flops' WHERE source_sha256 = "
                            "(SELECT source_sha256 FROM workload_revisions WHERE source_filename = '2_ReLU.py' AND NOT stand_in) "
                            "RETURNING source_sha256")
    assert len(damaged) == 1
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert _traced(capsys.readouterr().err) == (1 + STAND_INS, problems - 1 - STAND_INS)

    # A new tracer revision: every problem is traced again, and the revisions say who traced them.
    monkeypatch.setattr(traces, "TRACER_REVISION", "problem-trace/test-next")
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert _traced(capsys.readouterr().err) == (problems, 0)
    traced = [r for r in _revisions(db_url).values() if r["analysis"] is not None]
    assert {r["traced_with"].split(" torch ")[0] for r in traced} == {"problem-trace/test-next"}


def _import(db_url, root, revision="abc1234", observed="2026-06-01"):
    from kernelindex.ingest.kernelbench import import_kernelbench

    return import_kernelbench(db_url, root, revision=revision, observed=observed, progress=False)


@pytest.fixture
def sent_to_sandbox(monkeypatch):
    """The filenames each import hands the sandbox to trace, one list per call."""
    from kernelindex.ingest import problem_trace

    calls: list[list[str]] = []
    real = problem_trace.trace_problems_isolated

    def counting(items, *args, **kwargs):
        calls.append([filename for _, filename in items])
        return real(items, *args, **kwargs)

    monkeypatch.setattr(problem_trace, "trace_problems_isolated", counting)
    return calls


def test_the_sandbox_sees_only_new_or_changed_problems(db_url, checkout, sent_to_sandbox):
    # Without the seed's stand-ins (traced every time, see STAND_INS): upstream files only.
    for stand_in in ("9_ResNet18.py", "12_VGG19.py"):
        (checkout / "KernelBench" / "level3" / stand_in).unlink()
    first = _import(db_url, checkout)
    problems = first.traces_fresh
    assert problems >= 5 and first.traces_reused == 0 and not first.untraced
    assert sorted(sent_to_sandbox[0]) == sorted(p.name for p in checkout.glob("KernelBench/level*/*.py"))

    again = _import(db_url, checkout)
    assert (again.traces_fresh, again.traces_reused) == (0, problems)
    assert len(sent_to_sandbox) == 1  # an unchanged checkout starts no sandbox at all

    relu = checkout / "KernelBench" / "level1" / "2_ReLU.py"
    relu.write_text(relu.read_text().replace("dim = 128", "dim = 64"))
    changed = _import(db_url, checkout, "def5678", "2026-07-01")
    assert (changed.traces_fresh, changed.traces_reused) == (1, problems - 1)
    assert sent_to_sandbox[1:] == [["2_ReLU.py"]]
    assert changed.workloads_new_revision == 1 and changed.workloads_unchanged == problems - 1
