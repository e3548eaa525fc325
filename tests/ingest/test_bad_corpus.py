"""The bad-input corpus (tests/fixtures/bad/, written by make_corpus.py): every file must be refused
with an error naming the file, the line, the key and the reason; --strict must leave the database as
it was; a default ingest must land exactly the good lines around the bad one. And validation must
stream: its memory stays far below the size of its input."""

from __future__ import annotations

import asyncio
import copy
import json
import tracemalloc

import pytest

from tests.conftest import TEMPLATE_DB, _admin, _fresh_database, _with_database
from tests.ingest.conftest import FIXTURES, snapshot

BAD = FIXTURES / "bad"
EXPECTED = json.loads((BAD / "expected.json").read_text())


@pytest.fixture(scope="module")
def corpus_db(pg_url, template_url) -> str:
    """One seeded database for the whole corpus: --strict must leave it as it was, and each case's
    good lines are runs of their own (environments named after the case), so cases do not interact."""
    name = _fresh_database(pg_url, TEMPLATE_DB)
    yield _with_database(pg_url, name)
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def ingest(corpus_db, monkeypatch, capsys):
    from kernelindex.cli.main import main
    from kernelindex.settings import get_settings

    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", corpus_db)
    get_settings.cache_clear()

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = main(["ingest", "runs", *args])
        out = capsys.readouterr()
        return status, out.out, out.err

    yield run
    get_settings.cache_clear()


def _runs_by_label(db_url: str) -> dict[str, int]:
    data = snapshot(db_url)
    labels = {e["id"]: e["label"] for e in data["environments"]}
    out: dict[str, int] = {}
    for run in data["runs"]:
        label = labels[run["environment_id"]]
        out[label] = out.get(label, 0) + 1
    return out


def test_the_corpus_is_complete():
    files = {p.name for p in BAD.glob("*.jsonl")}
    assert files == set(EXPECTED)
    assert len(files) >= 80
    for name, expected in EXPECTED.items():
        assert set(expected) == {"where", "key", "reason_contains", "good_lines"}, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_input(name, ingest, corpus_db):
    expected = EXPECTED[name]
    path = str(BAD / name)
    key = f" [{expected['key']}]" if expected["key"] else ""
    before = snapshot(corpus_db)

    status, out, err = ingest("--strict", path)
    assert status == 3, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if f"{path}: {expected['where']}{key}: " in line]
    assert lines, err
    assert any(expected["reason_contains"] in line for line in lines), lines
    assert "nothing written" in err
    assert snapshot(corpus_db) == before  # row counts and content

    status, out, err = ingest(path)
    assert status == 1, err
    assert any(f"{path}: {expected['where']}{key}: " in line and expected["reason_contains"] in line for line in err.splitlines())
    after = snapshot(corpus_db)
    good = expected["good_lines"]
    assert len(after["runs"]) == len(before["runs"]) + len(good)
    landed = {label for label in _runs_by_label(corpus_db) if label and label.startswith(f"corpus-{name.removesuffix('.jsonl')}-")}
    assert landed == {f"corpus-{name.removesuffix('.jsonl')}-{n}" for n in good}
    rows = {line.rsplit(None, 1)[0].strip(): int(line.rsplit(None, 1)[1].replace(",", "")) for line in out.splitlines() if line.strip()}
    assert rows["runs inserted"] == len(good)
    assert rows["runs rejected"] == 1


# -- the typed structs agree with jsonschema ----------------------------------------------------


def _mutations():
    from tests.fixtures.bad.make_corpus import GOOD

    values = [None, "x", "", -1, 0, 1, 1.5, 2.0, True, [], {}, [1.5], {"a": 1}, "fp16", "passed", "kernelindex.run/1"]

    def leaves(value, path=()):
        if isinstance(value, dict):
            yield path
            for k, v in value.items():
                yield from leaves(v, path + (k,))
        elif isinstance(value, list):
            yield path
        else:
            yield path

    for path in leaves(GOOD):
        if not path:
            continue
        for value in values:
            rec = copy.deepcopy(GOOD)
            target = rec
            for p in path[:-1]:
                target = target[p]
            target[path[-1]] = value
            yield path, rec
        rec = copy.deepcopy(GOOD)
        target = rec
        for p in path[:-1]:
            target = target[p]
        del target[path[-1]]
        yield path + ("<deleted>",), rec
        rec = copy.deepcopy(GOOD)
        target = rec
        for p in path[:-1]:
            target = target[p]
        if isinstance(target, dict):
            target["unexpected"] = 1
            yield path[:-1] + ("<extra>",), rec


def test_the_typed_structs_agree_with_jsonschema():
    # Was the compiled schema predicate's test; the structs replaced it (more in test_record_structs).
    from tests.ingest.test_record_structs import VALIDATOR, structs_accept

    checked = 0
    for path, record in _mutations():
        valid = not any(True for _ in VALIDATOR.iter_errors(record))
        assert structs_accept(record) == valid, (path, record)
        checked += 1
    assert checked > 500


# -- streaming ----------------------------------------------------------------------------------


def test_validation_streams_in_bounded_memory():
    """12,000 lines of ~4 kB (~48 MB), from a generator, never on disk: the reader of `ingest runs`
    keeps a batch of records and the first problems, never the whole input (duplicates are found by
    the database, in the import's temporary table). (tracemalloc slows every allocation, hence few,
    long lines; a true 1 GB run: python -m perf.ingest_speed --lines.)"""
    from kernelindex.ingest.records import RunRecord, check_pending
    from kernelindex.ingest.runs import PartReader
    from kernelindex.ingest.summary import MAX_KEPT_PROBLEMS
    from tests.fixtures.bad.make_corpus import good

    def validate_lines(lines, label, batch_size=50):
        # Read as `ingest runs` reads, every line checked (none is a stored run's line already).
        reader = PartReader(lines, label, batch_size)
        good_records, problems, not_kept = 0, [], 0
        while (part := reader.next_part()) is not None:
            found = list(part.problems)
            good_records += len(part.records)
            for line in part.pending:
                checked = check_pending(line, label)
                if isinstance(checked, RunRecord):
                    good_records += 1
                else:
                    found += checked
            room = max(MAX_KEPT_PROBLEMS - len(problems), 0)
            problems += found[:room]
            not_kept += max(len(found) - room, 0)
        return good_records, problems, len(problems) + not_kept

    template = good("streaming", 0)
    template["environment"]["label"] = "stream-@@"
    template["environment"]["details"] = {"notes": "measured on a quiet node; " * 150, "node": "@@"}
    template = json.dumps(template) + "\n"
    size = 0

    def lines(count, bad_every=0):
        nonlocal size
        for i in range(count):
            line = template.replace("@@", str(i))
            if bad_every and i % bad_every == 0:
                line = line[:40] + "\n"
            data = line.encode()
            size += len(data)
            yield data

    tracemalloc.start()
    try:
        good_records, problems, _ = validate_lines(lines(12_000), "<generated>")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"validation of {size:,} bytes: peak {peak:,} bytes traced")
    assert good_records == 12_000 and not problems
    assert size > 45_000_000
    # A working set of a few MB (a batch of records, the memos of repeated names), whatever the size
    # of the input.
    assert peak < size / 10 and peak < 8_000_000, (peak, size)

    size = 0
    tracemalloc.start()
    try:
        good_records, problems, problem_count = validate_lines(lines(6_000, bad_every=2), "<generated>")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert good_records == 3_000 and problem_count == 3_000
    assert len(problems) == MAX_KEPT_PROBLEMS  # the rest are counted, not kept
    assert peak < size / 5 and peak < 8_000_000, (peak, size)


# -- one validator: what submitRuns is told is what `ingest runs` says ------------------------------

# Lines a GraphQL variable cannot carry as they are (not JSON, not UTF-8, a key twice: the JSON parser
# of a request keeps one), catalogue lines (not run records) and numbers Python's parser turns into
# infinity before any check sees the digits (1e400 is refused as 'Infinity' there).
_NOT_A_REQUEST = {"truncated_json", "deeply_nested_garbage", "non_utf8_bytes", "empty_file", "duplicate_keys",
                  "overflow_mean", "overflow_in_details"}


def _line_three(name: str) -> bytes:
    return (BAD / name).read_bytes().split(b"\n")[2] if EXPECTED[name]["where"] == "line 3" else b""


def _request_cases() -> list[str]:
    """The corpus cases a GraphQL variable can carry and check_record itself refuses (the others are
    found only against the database or the rest of the file): chosen here, not skipped one by one."""
    from kernelindex.ingest.records import read_line

    cases = []
    for name in sorted(EXPECTED):
        case, raw = name.removesuffix(".jsonl"), _line_three(name)
        if case in _NOT_A_REQUEST or case.startswith("catalogue_") or not raw:
            continue
        if isinstance(read_line(3, raw, "f"), list):
            cases.append(name)
    return cases


REQUEST_CASES = _request_cases()


def test_most_of_the_corpus_is_checked_on_both_paths():
    assert len(REQUEST_CASES) >= 60, len(REQUEST_CASES)


@pytest.mark.parametrize("name", REQUEST_CASES)
def test_the_cli_and_submit_runs_share_one_validator(name):
    from kernelindex.ingest.records import check_record, read_line

    raw = _line_three(name)
    cli_problems = read_line(3, raw, "f")
    assert isinstance(cli_problems, list)
    as_request = json.loads(raw.decode("utf-8", "surrogatepass"))  # as the GraphQL layer hands it over
    assert sorted(check_record(as_request), key=str) == sorted(((p.key, p.reason) for p in cli_problems), key=str)
