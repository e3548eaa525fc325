"""Schema fuzzing with schemathesis against the live GraphQL endpoint: a short, seeded run for CI.

Every operation of the schema (queries and mutations) gets generated queries, schema-valid
(positive) and schema-violating (negative). The mutations are sent with a token holding every
scope, so the fuzzer reaches their resolvers. A response fails when it is 5xx, or carries a GraphQL
error with code INTERNAL_SERVER_ERROR or the message 'Unexpected error.'
(tests/reliability/fuzz_hooks.py). Refusals of bad input are the API working and pass.

The long run is perf/fuzz_graphql.py (200 examples per operation and mode).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.helpers import make_token

HERE = Path(__file__).resolve().parent
HOOKS = HERE / "fuzz_hooks.py"
CONFIG = HERE / "schemathesis.toml"
SEED = 20261129
EXAMPLES = 25  # per operation and mode: the whole test stays well under a minute
TIMEOUT_S = 150  # a hard stop for each st run, far above what it takes


def _without_arguments() -> int:
    """Root fields (queries and mutations) that take no arguments, read from the schema."""
    import graphql

    from kernelindex.graphql.schema import export_sdl

    schema = graphql.build_schema(export_sdl())
    roots = [t for t in (schema.query_type, schema.mutation_type) if t is not None]
    return sum(1 for root in roots for field in root.fields.values() if not field.args)


def st_run(url: str, token: str, mode: str, report_dir: Path, *, examples: int = EXAMPLES, seed: int = SEED,
           workers: int = 1, phases: str = "fuzzing,stateful", timeout_s: float = TIMEOUT_S) -> tuple[dict, str]:
    """Run `st run` once; return its JSON report and its console output."""
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "--no-color", "run", f"{url}/graphql",
        "--mode", mode, "--max-examples", str(examples), "--seed", str(seed), "--workers", str(workers),
        "--phases", phases, "--checks", "no_internal_error", "--generation-database", "none",
        "--header", f"Authorization: Bearer {token}", "--request-timeout", "20",
        "--report", "json", "--report-dir", str(report_dir),
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS), "NO_COLOR": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=report_dir, timeout=timeout_s)
    reports = sorted(report_dir.glob("json-*.json"))
    assert reports, f"st wrote no report (exit {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return json.loads(reports[-1].read_text()), done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["positive", "negative"])
async def test_fuzzed_queries_never_fail_inside_the_server(live_server, db_url, tmp_path, mode):
    token = await make_token(db_url, "runs:write", "runs:retract", "runs:review", name="fuzz")
    report, output = st_run(live_server, token, mode, tmp_path)
    cases = report["test_cases"]
    print(f"schemathesis {mode}: {cases['generated']} cases generated, {cases['with_failures']} with failures, "
          f"{report['operations']['tested']}/{report['operations']['total']} operations tested")
    assert report["failures"] == [] and cases["with_failures"] == 0, output[-6000:]
    assert report["errors"] == [], output[-6000:]
    assert report["complete"], output[-6000:]
    # Enough was tried to mean something: every operation (negative mode cannot vary the root fields that take
    # no arguments: `policy`, `suites`, `sources`).
    assert report["operations"]["tested"] >= report["operations"]["total"] - (_without_arguments() if mode == "negative" else 0)
    assert cases["generated"] >= report["operations"]["tested"] * EXAMPLES // 2, cases
