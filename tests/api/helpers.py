"""Building run records for tests."""

from __future__ import annotations

import copy
import json

from kernelindex.seed import SEEDS_DIR


def seed_record(index: int = 0) -> dict:
    lines = (SEEDS_DIR / "runs.jsonl").read_text().splitlines()
    return json.loads(lines[index])


def synthetic_records(count: int, slug: str = "kernelbench-l3-p9-resnet18", batch: int = 2, start: int = 0) -> list[dict]:
    """`count` passed runs, each in an environment of its own on H100 SXM."""
    base = seed_record(3 if batch == 2 else 7)
    out = []
    for i in range(start, start + count):
        rec = copy.deepcopy(base)
        rec["workload"] = {"slug": slug}
        rec["configuration"]["bindings"] = {"batch_size": batch}
        rec["environment"] = {
            "hardware": {"sku": "NVIDIA H100 SXM5 80GB"},
            "provider": "TestCloud",
            "label": f"pool-{i}",
            "software": {"torch": "2.13.0"},
        }
        mean = 1.2 + (i % 50) / 100
        rec["statistics"] = {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "num_trials": 100}
        rec["source"] = {"name": "Synthetic test source", "revision": "t1"}
        rec["evidence"] = "measured"
        out.append(rec)
    return out


async def write_records(db_url: str, records: list[dict]):
    from kernelindex.db.engine import make_engine, make_sessionmaker, transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    from kernelindex.services.records import refresh_all_records

    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            summary = await RunWriter(session).write([RunRecord(r, "test", f"line {i + 1}") for i, r in enumerate(records)])
            await refresh_all_records(session)
            return summary
    finally:
        await engine.dispose()
