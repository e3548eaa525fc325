"""The floor under `kernelindex ingest runs`: the least a program can do with the same file.

    python -m perf.ingest_floor DATABASE_URL runs.jsonl     # prints one JSON object

A separate process (interpreter start-up included, as for the command it is the floor of) that
imports only the standard library and asyncpg, then:

1. decode: `json.loads` of every line;
2. COPY: the rows, one per line, into a temporary staging table of the `runs` columns (binary COPY);
3. merge: `INSERT INTO floor_runs SELECT … FROM stage ON CONFLICT DO NOTHING`, where floor_runs is
   `CREATE TABLE … (LIKE runs INCLUDING ALL)`: the same columns, check constraints and indexes (the
   live natural-key index included) as `runs`, without its foreign keys and triggers.

Run twice on one database, the second run is the floor of ingesting the same file again: every row
already present, so the merge only compares. Nothing is checked, hashed or resolved (the ids are
made up from the line's names), so this is a floor, not an ingest.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime

import asyncpg

COLUMNS = (
    "workload_id", "workload_revision_id", "bindings", "dtype", "configuration_key", "implementation_id", "environment_id",
    "protocol_id", "source_snapshot_id", "status", "failure_reason", "mean_ms", "std_ms", "min_ms", "max_ms", "median_ms",
    "p5_ms", "p95_ms", "num_trials", "samples_ms", "compile_time_ms", "correctness", "observed_at", "evidence",
    "content_sha256", "figure",
)
# The live natural-key index of runs (migration 0016 added upstream_id; a run record names none: '').
KEY = "workload_revision_id, configuration_key, implementation_id, environment_id, protocol_id, source_snapshot_id, upstream_id"


def _ids(names: dict[str, int], name: str) -> int:
    return names.setdefault(name, len(names) + 1)


def _read(path: str) -> list[bytes]:
    with open(path, "rb") as stream:
        return stream.readlines()


async def main(url: str, path: str) -> dict[str, float]:
    started = time.perf_counter()
    lines = _read(path)
    decoded = [json.loads(line) for line in lines]
    decode_s = time.perf_counter() - started

    workloads: dict[str, int] = {}
    implementations: dict[str, int] = {}
    environments: dict[str, int] = {}
    rows = []
    for data in decoded:
        config = data["configuration"]
        stats = data.get("statistics") or {}
        env = data["environment"]
        rows.append((
            _ids(workloads, data["workload"]["slug"]), _ids(workloads, data["workload"]["slug"]),
            json.dumps(config["bindings"]), config["dtype"], json.dumps(config, sort_keys=True),
            _ids(implementations, data["implementation"]["slug"]), _ids(environments, f"{env.get('provider')}/{env.get('label')}"),
            1, 1, data["status"], data.get("failure_reason"), stats.get("mean"), stats.get("std"), stats.get("min"),
            stats.get("max"), stats.get("median"), stats.get("p5"), stats.get("p95"), stats.get("num_trials"),
            data.get("samples_ms"), data.get("compile_time_ms"),
            None if data.get("correctness") is None else json.dumps(data["correctness"]),
            datetime.fromisoformat(data["observed_at"].replace("Z", "+00:00")), data["evidence"], "floor",
            stats.get("mean"),  # the headline figure a run record's mean is (ck_runs_passed_has_figure)
        ))
    rows_s = time.perf_counter() - started - decode_s

    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS floor_runs (LIKE runs INCLUDING ALL)")
        before = time.perf_counter()
        async with conn.transaction():
            await conn.execute(
                "CREATE TEMPORARY TABLE floor_stage AS SELECT " + ", ".join(COLUMNS) + " FROM runs WITH NO DATA"
            )
            await conn.copy_records_to_table("floor_stage", records=rows, columns=COLUMNS)
            copied = time.perf_counter()
            status = await conn.execute(
                f"INSERT INTO floor_runs ({', '.join(COLUMNS)}) SELECT {', '.join(COLUMNS)} FROM floor_stage "
                f"ON CONFLICT ({KEY}) WHERE superseded_at IS NULL DO NOTHING"
            )
        merged = time.perf_counter()
    finally:
        await conn.close()
    return {
        "lines": len(lines), "inserted": int(status.split()[-1]), "decode_s": round(decode_s, 3), "rows_s": round(rows_s, 3),
        "copy_s": round(copied - before, 3), "merge_s": round(merged - copied, 3),
    }


if __name__ == "__main__":
    figures = asyncio.run(main(sys.argv[1], sys.argv[2]))
    print(json.dumps(figures))
