"""revisions-v1: upstream history decides the current revision, whatever the order of imports and seeds.

Two synthetic KernelBench checkouts: the newer one revises ReLU, puts another problem under number
50 (replaced), renames problem 51 (same file, other name), drops 52 (removed) and adds 53. Imported
old → new and new → old, with `seed` before, between and after, they end in the same state.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from kernelindex.ingest.seed import SEEDS_DIR
from kernelindex.rules.identity import sha256_hex
from tests.ingest.conftest import entry, fetch, snapshot, write_timing

RESNET, VGG = "kernelbench-l3-p9-resnet18", "kernelbench-l3-p12-vgg19"
OLD = ("--revision", "0ld0001", "--observed", "2026-04-01")
NEW = ("--revision", "new0002", "--observed", "2026-07-01")


def problem(op: str, dim: int = 128) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n\n    def forward(self, x):\n        return {op}\n\n\n"
        f"batch_size = 16\ndim = {dim}\n\n\ndef get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )


def make_checkout(root: Path, files: dict[str, str], timings: dict[str, float]) -> Path:
    level1 = root / "KernelBench" / "level1"
    level3 = root / "KernelBench" / "level3"
    level1.mkdir(parents=True)
    level3.mkdir(parents=True)
    for name, source in files.items():
        (level1 / name).write_text(source)
    # The reference workloads as the seed's own modules: recognised as the seed's revisions.
    shutil.copy(SEEDS_DIR / "reference" / "resnet18.py", level3 / "9_ResNet18.py")
    shutil.copy(SEEDS_DIR / "reference" / "vgg19.py", level3 / "12_VGG19.py")
    write_timing(root, "H100_Modal", "torch", {"level1": {name: entry(mean) for name, mean in timings.items()}})
    return root


@pytest.fixture
def checkouts(tmp_path) -> tuple[Path, Path]:
    renamed = problem("torch.tanh(x)")
    old = make_checkout(
        tmp_path / "old",
        {"2_ReLU.py": problem("torch.relu(x)"), "50_Product_reduction.py": problem("torch.prod(x, dim=1)"),
         "51_Old_name.py": renamed, "52_Removed_problem.py": problem("torch.sigmoid(x)")},
        {"2_ReLU.py": 0.05, "50_Product_reduction.py": 0.3, "51_Old_name.py": 0.2, "52_Removed_problem.py": 0.1},
    )
    new = make_checkout(
        tmp_path / "new",
        {"2_ReLU.py": problem("torch.relu(x)", dim=256), "50_Conv2D.py": problem("torch.abs(x)"),
         "51_New_name.py": renamed, "53_Added_problem.py": problem("torch.exp(x)")},
        {"2_ReLU.py": 0.07, "50_Conv2D.py": 0.4, "51_New_name.py": 0.21, "53_Added_problem.py": 0.5},
    )
    return old, new


def _upstream_checkout(tmp_path, upstream: dict[str, str]):
    """A checkout at the seed's revision holding the synthetic "upstream" files, with the one timing
    entry that is also the seed's H100_Modal eager ResNet18 run."""
    root = tmp_path / "checkout"
    level3 = root / "KernelBench" / "level3"
    level3.mkdir(parents=True)
    (level3 / "9_ResNet18.py").write_text(upstream[RESNET])
    (level3 / "12_VGG19.py").write_text(upstream[VGG])
    write_timing(root, "H100_Modal", "torch", {"level3": {"9_ResNet18.py": {
        "mean": 1.67, "std": 0.0492, "min": 1.61, "max": 1.96, "num_trials": 100, "hardware": "NVIDIA H100 80GB HBM3",
        "device": "cuda:0"}}})
    return root


def _pages(db_url: str, slugs: list[str]) -> dict[str, dict]:
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW

    async def fetch():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                return {s: (await client.get(f"/workloads/{s}.json")).json() for s in slugs}

    return asyncio.run(fetch())


def _graphql(db_url: str, query: str) -> dict:
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW

    async def fetch():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                return (await client.post("/graphql", json={"query": query})).json()

    body = asyncio.run(fetch())
    assert "errors" not in body, body["errors"]
    return body["data"]


def final_state(db_url: str) -> dict:
    """What must not depend on the order: current revisions, snapshot membership, eligible runs, pages."""
    workloads = fetch(
        db_url,
        "SELECT w.slug, w.in_latest_snapshot, r.source_sha256 AS current, "
        "(SELECT count(*) FROM workload_revisions x WHERE x.workload_id = w.id) AS revisions "
        "FROM workloads w LEFT JOIN workload_revisions r ON r.id = w.current_revision_id ORDER BY w.slug",
    )
    slugs = [w["slug"] for w in workloads]
    pages = _pages(db_url, slugs)
    for page in pages.values():
        page.pop("history", None)  # the record history is history: it follows the order things happened
        page.pop("databaseId", None)
    return {"workloads": workloads, "pages": pages}


def _stable(state: dict) -> str:
    # Run and revision ids differ between the two databases; everything else must be equal.
    return json.dumps(state, sort_keys=True, default=str)


def _drop_ids(value):
    if isinstance(value, dict):
        return {k: _drop_ids(v) for k, v in value.items() if k not in ("id", "databaseId", "runId")}
    if isinstance(value, list):
        return [_drop_ids(v) for v in value]
    return value


def test_any_order_of_imports_and_seeds_gives_the_same_state(cli, db_url, pg_url, checkouts, capsys, monkeypatch):
    from tests.conftest import TEMPLATE_DB, _admin, _fresh_database, _with_database

    old, new = checkouts
    reference_pages = _pages(db_url, [RESNET, VGG])
    # A second database from the same seeded template, for the other order.
    other_name = _fresh_database(pg_url, TEMPLATE_DB)
    other = _with_database(pg_url, other_name)
    try:
        assert cli("ingest", "kernelbench", str(old), *OLD) == 0
        assert cli("seed") == 0
        capsys.readouterr()
        assert cli("ingest", "kernelbench", str(new), *NEW) == 0
        err = capsys.readouterr().err
        assert "upstream replaced: kernelbench-l1-p50-product-reduction → kernelbench-l1-p50-conv2d" in err
        assert "upstream renamed: kernelbench-l1-p51-old-name → kernelbench-l1-p51-new-name" in err
        assert "upstream removed: kernelbench-l1-p52-removed-problem" in err
        assert "upstream added: kernelbench-l1-p53-added-problem" in err
        assert cli("seed") == 0
        first = final_state(db_url)

        from kernelindex.settings import get_settings

        monkeypatch.setenv("KERNELINDEX_DATABASE_URL", other)

        get_settings.cache_clear()
        assert cli("ingest", "kernelbench", str(new), *NEW) == 0
        assert cli("seed") == 0
        assert cli("ingest", "kernelbench", str(old), *OLD) == 0  # the old checkout, imported last
        assert cli("seed") == 0
        second = final_state(other)
    finally:
        asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{other_name}" WITH (FORCE)'))

    assert _stable(_drop_ids(first)) == _stable(_drop_ids(second))
    by_slug = {w["slug"]: w for w in first["workloads"]}
    relu = "kernelbench-l1-p2-relu"
    assert by_slug[relu]["current"] == sha256_hex(problem("torch.relu(x)", dim=256)) and by_slug[relu]["revisions"] == 2
    assert first["pages"][relu]["eligibleRunCount"] == 1 and first["pages"][relu]["headline"]["latencyMs"] == 0.07
    latest = {slug: w["in_latest_snapshot"] for slug, w in by_slug.items()}
    assert latest == {
        relu: True, "kernelbench-l1-p50-product-reduction": False, "kernelbench-l1-p50-conv2d": True,
        "kernelbench-l1-p51-old-name": False, "kernelbench-l1-p51-new-name": True,
        "kernelbench-l1-p52-removed-problem": False, "kernelbench-l1-p53-added-problem": True, RESNET: True, VGG: True,
    }
    # The seed's revisions stay current (the stand-in modules are recognised), their pages unchanged.
    assert by_slug[RESNET]["current"] == "7458bb2ffb7e81fe8d9d8bf192e8249f887d6d2436c958480be272629f22be00"
    assert by_slug[VGG]["current"] == "688113e05dedf10a1881e549d86559e3cc5b32be1259e976bf98b020f503340e"
    for slug in (RESNET, VGG):
        expected = dict(reference_pages[slug])
        expected.pop("history", None)
        expected.pop("databaseId", None)
        assert _drop_ids(first["pages"][slug]) == _drop_ids(expected)


def test_restarts_change_nothing(cli, db_url, checkouts):
    old, new = checkouts
    assert cli("ingest", "kernelbench", str(new), *NEW) == 0
    before = snapshot(db_url)
    events = fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"]
    for _ in range(3):
        assert cli("seed") == 0
    assert snapshot(db_url) == before
    assert fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"] == events


@pytest.mark.parametrize("order", ["older then newer", "newer then older"])
def test_seed_between_reimports_adds_nothing_in_either_order(cli, db_url, checkouts, capsys, order):
    """The truth issue's point 6: after both imports (in either order), `seed` any number of times and then the
    last import again, unchanged: nothing traced, no row added or changed, no record event."""
    old, new = checkouts
    steps = [(old, OLD), (new, NEW)] if order == "older then newer" else [(new, NEW), (old, OLD)]
    for root, args in steps:
        assert cli("ingest", "kernelbench", str(root), *args) == 0
    before = snapshot(db_url)
    events = fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"]
    capsys.readouterr()
    for _ in range(2):
        assert cli("seed") == 0
        last, args = steps[-1]
        assert cli("ingest", "kernelbench", str(last), *args) == 0
        assert "tracing 0 problems" in capsys.readouterr().err
    assert snapshot(db_url) == before
    assert fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"] == events


def test_revision_change_is_a_record_event_and_old_runs_stay(cli, db_url, checkouts):
    old, new = checkouts
    assert cli("ingest", "kernelbench", str(old), *OLD) == 0
    assert cli("ingest", "kernelbench", str(new), *NEW) == 0
    data = _graphql(
        db_url,
        """{ workload(slug: "kernelbench-l1-p2-relu") { inLatestSnapshot eligibleRunCount
              revisions { sha256 current upstreamRevision revisionDate standIn snapshots { upstreamRevision complete } }
              recordHistory(first: 10) { edges { node { kind words } } } }
            runs(workload: "kernelbench-l1-p2-relu", first: 10) { edges { node { meanMs
              revision { sha256 current upstreamRevision revisionDate } } } } }""",
    )
    w = data["workload"]
    assert w["inLatestSnapshot"] is True and w["eligibleRunCount"] == 1
    assert [(r["upstreamRevision"], r["current"]) for r in w["revisions"]] == [("0ld0001", False), ("new0002", True)]
    kinds = [e["node"]["kind"] for e in w["recordHistory"]["edges"]]
    assert "REVISION_CHANGED" in kinds
    runs = sorted((e["node"]["meanMs"], e["node"]["revision"]["upstreamRevision"], e["node"]["revision"]["current"])
                  for e in data["runs"]["edges"])
    assert runs == [(0.05, "0ld0001", False), (0.07, "new0002", True)]


def test_a_number_held_by_two_problems_resolves_to_the_latest(cli, db_url, checkouts, tmp_path, capsys):
    from tests.api.helpers import synthetic_records

    old, new = checkouts
    assert cli("ingest", "kernelbench", str(old), *OLD) == 0
    assert cli("ingest", "kernelbench", str(new), *NEW) == 0
    record = synthetic_records(1, start=70)[0]
    record["workload"] = {"suite": "kernelbench", "level": 1, "problem": 50}
    record["configuration"]["bindings"] = {"batch_size": 16, "dim": 128}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert cli("ingest", "runs", str(path)) == 0
    (row,) = fetch(
        db_url, "SELECT w.slug FROM runs r JOIN workloads w ON w.id = r.workload_id "
        "JOIN environments e ON e.id = r.environment_id WHERE e.label = 'pool-70'",
    )
    assert row["slug"] == "kernelbench-l1-p50-conv2d"


def _synthetic_seed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of seeds/ whose upstream facts name synthetic "upstream" files (we do not hold the real
    ones): the stand-in module plus a line, so they trace alike. (seeds dir, upstream text by slug)"""
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS_DIR, seeds)
    document = json.loads((seeds / "workloads.json").read_text())
    upstream = {}
    for workload in document["workloads"]:
        text = (seeds / workload["reference_file"]).read_text() + "\n# upstream: only this line differs from the stand-in\n"
        upstream[workload["slug"]] = text
        workload["upstream_file"]["sha256"] = sha256_hex(text)
        workload["upstream_file"]["size"] = len(text.encode())
    (seeds / "workloads.json").write_text(json.dumps(document, indent=1))
    return seeds, upstream


def test_the_checkout_at_the_seeds_revision_is_the_seeds_revision(empty_db_url, tmp_path):
    """The seed names the upstream file by digest; importing that checkout recognises the revision:
    the seed's runs and the checkout's sit in one revision, the real source replaces the stand-in,
    the pages read as before, and seeding again downgrades nothing."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.kernelbench import import_kernelbench
    from kernelindex.ingest.seed import load_seed

    seeds, upstream = _synthetic_seed(tmp_path)
    upgrade(empty_db_url)
    url = empty_db_url
    asyncio.run(in_own_transaction(url, lambda session: load_seed(session, seeds)))
    query = """{ runs(workload: "%s", first: 20) { edges { node { revision { sha256 standIn current upstreamRevision revisionDate } } } } }"""
    seeded = _graphql(url, query % RESNET)["runs"]["edges"]
    assert len(seeded) == 4
    assert {(e["node"]["revision"]["sha256"], e["node"]["revision"]["standIn"], e["node"]["revision"]["upstreamRevision"])
            for e in seeded} == {(sha256_hex(upstream[RESNET]), True, "423217d9fda91e0c2d67e4a43bf62f96f6d104f1")}
    before = _pages(url, [RESNET, VGG])

    root = _upstream_checkout(tmp_path, upstream)
    summary = import_kernelbench(url, root, revision="423217d", observed="2026-03-05", progress=False)
    assert (summary.inserted, summary.superseded, summary.unchanged) == (0, 0, 1)
    asyncio.run(in_own_transaction(url, lambda session: load_seed(session, seeds)))  # a restart: no downgrade

    revisions = fetch(
        url, "SELECT w.slug, r.stand_in, r.reference_source, r.source_sha256, w.current_revision_id = r.id AS current "
        "FROM workload_revisions r JOIN workloads w ON w.id = r.workload_id ORDER BY w.slug",
    )
    assert [(r["slug"], r["stand_in"], r["current"]) for r in revisions] == [(VGG, False, True), (RESNET, False, True)]
    assert {r["slug"]: r["reference_source"] for r in revisions} == upstream
    snapshots = fetch(url, "SELECT upstream_revision, complete FROM suite_snapshots")
    assert snapshots == [{"upstream_revision": "423217d9fda91e0c2d67e4a43bf62f96f6d104f1", "complete": True}]
    after = _pages(url, [RESNET, VGG])
    for slug in (RESNET, VGG):
        for page in (before[slug], after[slug]):
            for key in ("referenceSource", "identity"):
                page.pop(key, None)
        assert after[slug] == before[slug]
    runs = _graphql(url, query % RESNET)["runs"]["edges"]
    assert len(runs) == 4  # the H100_Modal eager entry is the seed's run: unchanged, same revision
    assert {e["node"]["revision"]["standIn"] for e in runs} == {False}


def test_seed_after_the_import_ends_as_seed_before_it(pg_url, tmp_path):
    """Checkout at the seed's revision first, then the seed (the catalogue loaded before either, as
    both need it); or the seed first: the same revisions, declarations, runs and pages."""
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.kernelbench import import_kernelbench
    from kernelindex.ingest.seed import load_hardware_catalogue, load_implementations, load_seed
    from tests.conftest import _admin, _fresh_database, _with_database

    seeds, upstream = _synthetic_seed(tmp_path)
    root = _upstream_checkout(tmp_path, upstream)

    def seed(url):
        asyncio.run(in_own_transaction(url, lambda session: load_seed(session, seeds)))

    def catalogue(url):
        async def work(session):
            await load_hardware_catalogue(session, seeds / "hardware.json")
            await load_implementations(session, seeds / "implementations.json")

        asyncio.run(in_own_transaction(url, work))

    def import_(url):
        import_kernelbench(url, root, revision="423217d", observed="2026-03-05", progress=False)

    def state(url):
        revisions = fetch(
            url, "SELECT w.slug, w.in_latest_snapshot, r.source_sha256, r.stand_in, r.reference_source, r.semantics, "
            "r.analysis, r.canonical_bindings, r.identity_sha256, w.current_revision_id = r.id AS current "
            "FROM workload_revisions r JOIN workloads w ON w.id = r.workload_id ORDER BY w.slug",
        )
        runs = fetch(url, "SELECT count(*) AS n FROM runs WHERE superseded_at IS NULL")
        pages = _drop_ids(_pages(url, [RESNET, VGG]))
        for page in pages.values():
            page.pop("history", None)
        return _stable({"revisions": revisions, "runs": runs, "pages": pages})

    states = []
    for order in ((catalogue, seed, import_, seed), (catalogue, import_, seed, seed)):
        name = _fresh_database(pg_url, None)
        url = _with_database(pg_url, name)
        try:
            upgrade(url)
            for step in order:
                step(url)
            states.append(state(url))
        finally:
            asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    assert states[0] == states[1]
    assert '"stand_in": false' in states[0] and '"stand_in": true' not in states[0]


def test_migration_keeps_the_stored_history_as_snapshots(empty_db_url):
    """0005 on a database with revisions: one incomplete snapshot per upstream revision they name,
    dated by the source snapshot of that revision, and the current revisions left as they were."""
    from kernelindex.db.migrate import upgrade

    upgrade(empty_db_url, "0004")
    fetch(
        empty_db_url,
        "WITH w AS (INSERT INTO workloads (slug, suite, level, problem_number, name, kind) "
        "VALUES ('kernelbench-l1-p2-relu', 'kernelbench', 1, 2, 'ReLU', 'operator') RETURNING id), "
        "r AS (INSERT INTO workload_revisions (workload_id, source_sha256, reference_source, upstream_revision, identity_sha256) "
        "SELECT id, 'abc', 'src', '423217d', 'x' FROM w RETURNING id, workload_id), "
        "s AS (INSERT INTO sources (name) VALUES ('KernelBench baseline timings') RETURNING id), "
        "ss AS (INSERT INTO source_snapshots (source_id, revision, revision_date) SELECT id, '423217d', '2026-03-05' FROM s) "
        "SELECT 1",
    )
    fetch(empty_db_url, "UPDATE workloads SET current_revision_id = r.id FROM workload_revisions r WHERE r.workload_id = workloads.id")
    upgrade(empty_db_url)
    assert fetch(empty_db_url, "SELECT suite, upstream_revision, revision_date::text AS d, complete FROM suite_snapshots") == [
        {"suite": "kernelbench", "upstream_revision": "423217d", "d": "2026-03-05", "complete": False}
    ]
    (member,) = fetch(
        empty_db_url, "SELECT m.workload_revision_id = w.current_revision_id AS same FROM suite_snapshot_members m "
        "JOIN workloads w ON w.id = m.workload_id",
    )
    assert member["same"] is True


def test_revision_spellings_and_suite_changes():
    from kernelindex.ingest.workloads import SuiteChange, revision_matches, suite_changes

    assert revision_matches("423217d9fda91e0c2d67e4a43bf62f96f6d104f1", "423217d")
    assert not revision_matches("423217d9fda91e0c2d67e4a43bf62f96f6d104f1", "423217e")
    assert not revision_matches("release-10", "release-1") and not revision_matches("423217", "4232170")
    before = {(1, 50): [("p50-prod", "a")], (1, 51): [("p51-old", "b")], (1, 52): [("p52", "c")], (1, 2): [("relu", "r")]}
    after = {(1, 50): [("p50-conv", "d")], (1, 51): [("p51-new", "b")], (1, 53): [("p53", "e")], (1, 2): [("relu", "r2")]}
    assert suite_changes(before, after) == [
        SuiteChange("replaced", "p50-prod", "p50-conv"), SuiteChange("renamed", "p51-old", "p51-new"),
        SuiteChange("removed", "p52", None), SuiteChange("added", None, "p53"),
    ]


def test_source_revision_resolves_to_its_snapshot_in_any_spelling():
    """A record's source revision picks the workload's revision in the suite snapshot of that revision,
    spelled whole or abbreviated; any other revision (a producer's build name, which resolve_workload_ref
    no longer compares spelling by spelling) falls to the current revision."""
    from kernelindex.ingest.resolve import ResolvedWorkload, WorkloadRef, resolve_workload_ref
    from kernelindex.ingest.workloads import is_git_hash

    full = "423217d9fda91e0c2d67e4a43bf62f96f6d104f1"
    w = WorkloadRef(id=1, slug="w", current_revision_id=9, snapshot_revisions={full: 7, "release-1": 8})
    by_slug = {"w": w}

    def revision(source_revision: str | None) -> int:
        found = resolve_workload_ref({"slug": "w"}, by_slug, {}, source_revision)
        assert isinstance(found, ResolvedWorkload)
        return found.revision_id

    assert [revision(r) for r in (full, "423217d", "423217d9fda9", "release-1")] == [7, 7, 7, 8]
    assert [revision(r) for r in ("423217e", "release-10", "bench-17", "423217", None)] == [9, 9, 9, 9, 9]
    assert is_git_hash("423217d") and is_git_hash(full)
    assert not is_git_hash("423217") and not is_git_hash("bench-17") and not is_git_hash("423217D")


def test_workload_resolver_remembers_revisions_that_name_no_snapshot_once(monkeypatch):
    """workload_resolver gives what resolve_workload_ref gives for every spelling of a source revision;
    revisions that can name no snapshot (a producer's build names, a new one on every record) are
    resolved once for the reference, not once a revision."""
    import kernelindex.ingest.resolve as resolve_module
    from kernelindex.ingest.resolve import WorkloadRef, resolve_workload_ref, workload_resolver

    full = "423217d9fda91e0c2d67e4a43bf62f96f6d104f1"
    by_slug = {
        "w": WorkloadRef(id=1, slug="w", current_revision_id=9, snapshot_revisions={full: 7, "release-1": 8}),
        # No current revision: only a snapshot's revision resolves it.
        "young": WorkloadRef(id=2, slug="young", current_revision_id=None, snapshot_revisions={full: 5}),
        "plain": WorkloadRef(id=3, slug="plain", current_revision_id=4),
    }
    revisions = [full, "423217d", "423217e", "release-1", "release-10", "", None, *(f"bench-{i}" for i in range(50))]
    refs = [{"slug": "w"}, {"slug": "young"}, {"slug": "plain"}, {"slug": "missing"}]
    expected = [[resolve_workload_ref(ref, by_slug, {}, rev) for rev in revisions] for ref in refs]

    calls = []

    def counted(ref, by_slug, by_triple, source_revision=None, by_key=None):
        calls.append((ref["slug"], source_revision))
        return resolve_workload_ref(ref, by_slug, by_triple, source_revision, by_key)

    monkeypatch.setattr(resolve_module, "resolve_workload_ref", counted)
    # Both orders, each with a resolver of its own: what one revision leaves in the memo never decides another's.
    for order in (revisions, revisions[::-1]):
        calls.clear()
        resolve = workload_resolver(by_slug, {})
        for _ in range(2):
            assert [[resolve(ref, rev) for rev in order] for ref in refs] == [
                [row[revisions.index(rev)] for rev in order] for row in expected]
        bench = [call for call in calls if call[1] and call[1].startswith("bench-")]
        # The builds' names reach resolve_workload_ref only where the reference itself is refused (a
        # missing workload, one without a current revision): there a revision could still decide.
        assert {slug for slug, _ in bench} == {"young", "missing"}
        assert len(calls) == len(set(calls))  # each remembered: the second pass resolved nothing again


def test_a_number_no_latest_snapshot_settles_is_ambiguous(cli, db_url, tmp_path, capsys):
    """Two partial snapshots put two problems under one number: by number it is refused, by slug it lands."""
    from datetime import date

    from kernelindex.db.engine import make_engine, make_sessionmaker, transaction
    from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot
    from tests.api.helpers import synthetic_records

    async def snapshots():
        engine = make_engine(db_url, pool_size=1, max_overflow=0)
        try:
            for revision, day, name, op in (("aaaa001", 1, "Product_reduction", "torch.prod(x, dim=1)"),
                                            ("bbbb002", 2, "Conv2D", "torch.abs(x)")):
                async with transaction(make_sessionmaker(engine)) as session:
                    await record_snapshot(
                        session, "kernelbench", revision, date(2026, 5, day),
                        [WorkloadSpec(suite="kernelbench", level=1, problem_number=50, name=name, reference_source=problem(op),
                                      canonical_bindings={"batch_size": 16, "dim": 128})],
                        complete=False,
                    )
        finally:
            await engine.dispose()

    asyncio.run(snapshots())
    record = synthetic_records(1, start=80)[0]
    record["workload"] = {"suite": "kernelbench", "level": 1, "problem": 50}
    record["configuration"]["bindings"] = {"batch_size": 16, "dim": 128}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert cli("ingest", "runs", str(path)) == 1
    err = capsys.readouterr().err
    assert "ambiguous: kernelbench level 1 problem 50 has been more than one problem" in err
    assert "kernelbench-l1-p50-conv2d, kernelbench-l1-p50-product-reduction" in err and "name the workload by slug" in err
    record["workload"] = {"slug": "kernelbench-l1-p50-conv2d"}
    path.write_text(json.dumps(record) + "\n")
    assert cli("ingest", "runs", str(path)) == 0


def test_export_after_upstream_history_reimports_as_no_change(cli, db_url, empty_db_url, checkouts, tmp_path):
    import httpx

    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.runs import ingest_runs_file
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    old, new = checkouts
    assert cli("ingest", "kernelbench", str(old), *OLD) == 0
    assert cli("ingest", "kernelbench", str(new), *NEW) == 0

    async def export() -> str:
        app = create_app(Settings(), database_url=db_url)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                return (await client.get("/exports/catalog.jsonl")).text

    path = tmp_path / "catalog.jsonl"
    path.write_text(asyncio.run(export()))
    events = fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"]
    again = asyncio.run(ingest_runs_file(db_url, path, str(path), progress=False))
    assert again.problems == [] and (again.inserted, again.superseded) == (0, 0)
    assert fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"] == events

    upgrade(empty_db_url)
    copied = asyncio.run(ingest_runs_file(empty_db_url, path, str(path), progress=False))
    assert copied.problems == [] and copied.inserted == again.unchanged
    query = (
        "SELECT w.slug, w.in_latest_snapshot, r.source_sha256 FROM workloads w "
        "JOIN workload_revisions r ON r.id = w.current_revision_id ORDER BY w.slug"
    )
    assert fetch(empty_db_url, query) == fetch(db_url, query)
