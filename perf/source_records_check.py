"""The records a served index shows for workloads of a kernelindex.com export, checked against the raw
lines of the export file, read here without the index's reader: for each kernel source of the export,
one workload with a record, its record on each GPU (the best of the GPU's environments) against every
passed latency run of the file on the workload's canonical case and that GPU.

    python -m perf.source_records_check EXPORT.jsonl.zst [--url http://127.0.0.1:8000/graphql] [--per-source 1]
    python -m perf.source_records_check EXPORT.jsonl.zst --every-configuration [--url …]

--every-configuration checks every workload of the export's sources at every configuration that holds
records, for latency (the mean) and for the source's score apart (eligibility-v3: Workload.recordsAt):
the record on each GPU against the best passed run of the file on that case and GPU. A run held for
review (plausibility-v2) is not a record, so a cell whose raw best the index holds is counted apart.

The index must hold that export as its newest (kernelindex ingest kernelindex-export EXPORT). Prints, per
workload and GPU, the record the API gives and the fastest raw run (its implementation, mean in ns), and
exits 1 when they differ. A script for the closing note of issue 25, not a test.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

import zstandard

QUERY = """query($suite: String!) { workloads(suite: $suite, first: 100) { edges { node { slug suiteKey
  canonicalConfiguration { bindings { axis value } dtype }
  records { run { figure upstreamId environment { hardware { sku driverProductNames } } implementation { title }
    protocol { metric statistic } source { name route } } } } } } }"""


def _raw(path: Path) -> dict[str, list[dict]]:
    tables: dict[str, list[dict]] = defaultdict(list)
    with path.open("rb") as handle:
        stream = zstandard.ZstdDecompressor().stream_reader(handle) if path.suffix == ".zst" else handle
        for line in io.TextIOWrapper(stream, encoding="utf-8"):
            if line.strip():
                item = json.loads(line)
                tables[item["table"]].append(item["row"])
    return tables


def _post(url: str, query: str, variables: dict) -> dict:
    request = urllib.request.Request(url, json.dumps({"query": query, "variables": variables}).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request) as response:
        body = json.load(response)
    if body.get("errors"):
        raise SystemExit(f"GraphQL errors: {body['errors']}")
    return body["data"]


EVERY_QUERY = """query($suite: String!, $after: String) { workloads(suite: $suite, first: 100, after: $after) {
  pageInfo { hasNextPage endCursor } edges { node { slug suiteKey heldRunCount
  configurations { key metric caseKey configuration { bindings { axis value } } } } } } }"""
RECORDS_AT = """query($slug: String!, $key: String, $metric: Metric!) { workload(slug: $slug) {
  recordsAt(configuration: $key, metric: $metric) { figure environment { hardware { driverProductNames } } } } }"""
# The figure of each metric in the unit the index keeps: a latency in ms (the file's mean in ns), a score in s.
RAW_FIGURES = {"LATENCY": ("latency", ("mean",), 1e-6), "SCORE": ("score", ("geomean", "unspecified"), 1.0)}


HELD = """query($slug: String!, $after: String) { workload(slug: $slug) { runs(first: 100, after: $after) {
  pageInfo { hasNextPage endCursor } edges { node { figure reviewState configuration { bindings { axis value } }
  environment { hardware { driverProductNames } } } } } } }"""


def _held(url: str, slug: str, axes: tuple, gpu: str, figure: float) -> bool:
    """Whether the workload's run of that figure, case and GPU is held for review (fastest first: stops
    past the figure)."""
    after = None
    while True:
        runs = _post(url, HELD, {"slug": slug, "after": after})["workload"]["runs"]
        for edge in runs["edges"]:
            run = edge["node"]
            if run["figure"] is not None and run["figure"] > figure * (1 + 1e-9):
                return False
            same_case = axes[:1] == ("#",) or tuple(sorted((b["axis"], b["value"]) for b in run["configuration"]["bindings"])) == axes
            if (same_case
                    and gpu in run["environment"]["hardware"]["driverProductNames"]
                    and abs(run["figure"] - figure) <= 1e-9 * figure and run["reviewState"] == "NEEDS_REVIEW"):
                return True
        if not runs["pageInfo"]["hasNextPage"]:
            return False
        after = runs["pageInfo"]["endCursor"]


def every_configuration(args: argparse.Namespace, raw: dict[str, list[dict]]) -> int:
    sources = {s["id"]: s["slug"] for s in raw["sources"]}
    operations = {o["id"]: o["slug"] for o in raw["operations"]}
    cases = {c["id"]: c for c in raw["workloads"]}
    # (metric, source, operation, case axes, GPU) → the best figure of a passed run, in the index's unit
    best: dict[tuple, float] = {}
    figures = {(m["runId"], metric): m["value"] * scale for m in raw["measurements"]
               for metric, (name, statistics, scale) in RAW_FIGURES.items()
               if m["metric"] == name and m["statistic"] in statistics}
    for r in raw["benchmark_runs"]:
        if r["status"] != "passed":
            continue
        case = cases[r["workloadId"]]
        axes = tuple(sorted((case.get("manifest", {}).get("spec", {}).get("axes") or {}).items()))
        for metric in RAW_FIGURES:
            if (r["id"], metric) in figures:
                # by its axes, and by its own id (the index names a case by it where axes do not tell it apart)
                for named in (axes, ("#", case["id"])):
                    key = (metric, sources[r["sourceId"]], operations[case["operationId"]], named, r["hardwareModel"])
                    best[key] = min(best.get(key, float("inf")), figures[(r["id"], metric)])
    counts = {"agree": 0, "differ": 0, "held": 0, "cells": 0}
    for source in sorted(set(sources.values())):
        after = None
        while True:
            page = _post(args.url, EVERY_QUERY, {"suite": source, "after": after})["workloads"]
            for edge in page["edges"]:
                node = edge["node"]
                for scope in node["configurations"]:
                    if scope["metric"] not in RAW_FIGURES:
                        continue
                    axes = tuple(sorted((b["axis"], b["value"]) for b in scope["configuration"]["bindings"]))
                    if scope["caseKey"]:
                        axes = ("#", scope["caseKey"])
                    records = _post(args.url, RECORDS_AT, {"slug": node["slug"], "key": scope["key"],
                                                           "metric": scope["metric"]})["workload"]["recordsAt"]
                    shown: dict[str, float] = {}
                    for record in records:
                        names = record["environment"]["hardware"]["driverProductNames"]
                        gpu = next((n for n in names if (scope["metric"], source, node["suiteKey"], axes, n) in best), names[0])
                        shown[gpu] = min(shown.get(gpu, float("inf")), record["figure"])
                    for gpu, figure in shown.items():
                        counts["cells"] += 1
                        want = best.get((scope["metric"], source, node["suiteKey"], axes, gpu))
                        if want is not None and abs(want - figure) <= 1e-9 * max(abs(want), 1e-12):
                            counts["agree"] += 1
                        elif want is not None and figure > want and _held(args.url, node["slug"], axes, gpu, want):
                            counts["held"] += 1  # the raw best is held for review: the record is the next one
                        else:
                            counts["differ"] += 1
                            print(f"  DIFFERS {source} {node['slug']} {scope['metric']} {dict(axes)} {gpu}: API {figure}, file {want}")
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        print(f"{source}: through {counts['cells']} cells so far")
    print(f"{counts['cells']} records (workload, configuration, metric, GPU): {counts['agree']} agree with the file, "
          f"{counts['held']} are the next best after a run held for review, {counts['differ']} differ")
    return 1 if counts["differ"] else 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.source_records_check", description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("--url", default="http://127.0.0.1:8000/graphql")
    parser.add_argument("--per-source", type=int, default=1)
    parser.add_argument("--every-configuration", action="store_true",
                        help="every workload at every configuration holding records, latency and score apart")
    args = parser.parse_args()
    raw = _raw(args.export)
    if args.every_configuration:
        sys.exit(every_configuration(args, raw))
    sources = {s["id"]: s["slug"] for s in raw["sources"]}
    operations = {o["id"]: o["slug"] for o in raw["operations"]}
    cases = {c["id"]: c for c in raw["workloads"]}
    titles = {i["id"]: i["title"] for i in raw["implementations"]}
    means = {m["runId"]: m["value"] for m in raw["measurements"] if m["metric"] == "latency" and m["statistic"] == "mean"}
    # Every passed latency run with a stated mean: (source, operation slug, case axes, GPU) → [(mean ns, title, id)]
    runs: dict[tuple, list[tuple[float, str, str]]] = defaultdict(list)
    for r in raw["benchmark_runs"]:
        if r["status"] != "passed" or r["id"] not in means:
            continue
        case = cases[r["workloadId"]]
        axes = tuple(sorted((case.get("manifest", {}).get("spec", {}).get("axes") or {}).items()))
        key = (sources[r["sourceId"]], operations[case["operationId"]], axes, r["hardwareModel"])
        runs[key].append((means[r["id"]], titles[r["implementationId"]], r["id"]))
    failures = 0
    for source in sorted(set(sources.values())):
        shown = 0
        for edge in _post(args.url, QUERY, {"suite": source})["workloads"]["edges"]:
            node = edge["node"]
            latency = [rec["run"] for rec in node["records"] if rec["run"]["protocol"]["metric"] == "LATENCY"]
            if not latency or shown >= args.per_source:
                continue
            shown += 1
            canonical = {b["axis"]: b["value"] for b in node["canonicalConfiguration"]["bindings"]}
            print(f"{source} · {node['slug']} (canonical {canonical or 'a suite of cases'})")
            # The record on each GPU: the best of its environments' records (an environment is the exact
            # software too: GPU MODE's MI300X runner went through dozens of torch nightlies).
            best: dict[str, dict] = {}
            for run in latency:
                sku = run["environment"]["hardware"]["sku"]
                if sku not in best or run["figure"] < best[sku]["figure"]:
                    best[sku] = run
            for run in best.values():
                names = run["environment"]["hardware"]["driverProductNames"]
                candidates = [(k, v) for k, v in runs.items() if k[0] == source and k[1] == node["suiteKey"] and k[3] in names
                              and all(dict(k[2]).get(a) == v for a, v in canonical.items())]
                # the canonical case: the one the record's own run is of
                matching = [v for _, v in candidates if any(x[2] == run["upstreamId"] for x in v)]
                if not matching:
                    print(f"  {run['environment']['hardware']['sku']}: record run {run['upstreamId']} not found in the file")
                    failures += 1
                    continue
                fastest = min(matching[0])
                same = abs(fastest[0] / 1e6 - run["figure"]) <= 1e-9 * max(1.0, run["figure"]) and fastest[1] == run["implementation"]["title"]
                failures += not same
                print(f"  {run['environment']['hardware']['sku']}: API record {run['figure']} ms by {run['implementation']['title']!r} "
                      f"({run['source']['name']} via {run['source']['route']}); file: {len(matching[0])} passed runs on that case, "
                      f"fastest {fastest[0]:g} ns by {fastest[1]!r} [{'agrees' if same else 'DIFFERS'}]")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
