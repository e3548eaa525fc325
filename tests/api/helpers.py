"""Building run records for tests."""

from __future__ import annotations

import copy
import json

from kernelindex.ingest.seed import SEEDS_DIR


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
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter
    from kernelindex.services.records import refresh_all_records

    async def work(session):
        summary = await RunWriter(session).write([RunRecord(r, "test", f"line {i + 1}") for i, r in enumerate(records)])
        await refresh_all_records(session)
        return summary

    return await in_own_transaction(db_url, work)


async def make_token(db_url: str, *scopes: str, name: str = "test", revoked: bool = False) -> str:
    """A new API token with the scopes (default runs:write), printed nowhere: returned."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services import tokens as auth

    async def work(session) -> str:
        row, token = await auth.create_token(session, scopes=scopes or ("runs:write",), name=name)
        if revoked:
            await auth.revoke_token(session, row.id)
        return token

    return await in_own_transaction(db_url, work)
