"""Compare two implementations across all level-3 workloads, inside comparable cohorts only.

    python examples/compare_implementations.py torch_eager torch_compile_inductor [--level 3] [--api URL]

For each workload and environment where both implementations have an eligible run, prints the two
latencies and the ratio. Runs from different environments are never compared.
"""

from __future__ import annotations

import argparse
import json
import urllib.request

# Cost 20 + 20 × 20 + 20 × 20 × 20 = 8,420, inside the server's limit (extensions.cost in each answer).
QUERY = """
query Compare($level: Int!, $after: String) {
  workloads(level: $level, first: 20, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { slug comparisons(first: 20) { gpu environment { id provider } rows(first: 20) { latencyMs implementation { slug } } } }
  }
}
"""


def graphql(api: str, query: str, variables: dict) -> dict:
    request = urllib.request.Request(
        f"{api}/graphql", data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        body = json.load(response)
    if body.get("errors"):
        raise SystemExit(f"API error: {body['errors'][0]['message']}")
    return body["data"]


def compare(api: str, first: str, second: str, level: int) -> list[tuple[str, str, float, float]]:
    rows, after = [], None
    while True:
        page = graphql(api, QUERY, {"level": level, "after": after})["workloads"]
        for workload in page["nodes"]:
            for cohort in workload["comparisons"]:
                best: dict[str, float] = {}
                for row in cohort["rows"]:
                    best.setdefault(row["implementation"]["slug"], row["latencyMs"])
                if first in best and second in best:
                    where = f"{cohort['gpu']} ({cohort['environment']['provider'] or 'unknown provider'})"
                    rows.append((workload["slug"], where, best[first], best[second]))
        if not page["pageInfo"]["hasNextPage"]:
            return rows
        after = page["pageInfo"]["endCursor"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    args = parser.parse_args()
    rows = compare(args.api, args.first, args.second, args.level)
    print(f"{'workload':<40} {'environment':<32} {args.first:>14} {args.second:>14} {'ratio':>7}")
    for slug, where, a, b in rows:
        print(f"{slug:<40} {where:<32} {a:>12.3f}ms {b:>12.3f}ms {a / b:>6.2f}×")
    if not rows:
        print("no cohort has eligible runs of both implementations")


if __name__ == "__main__":
    main()
