"""Compare two implementations across all level-3 workloads, inside comparable cohorts only.

    python examples/compare_implementations.py torch_eager torch_compile_inductor [--level 3] [--api URL]

For each workload and cohort (one environment, configuration and protocol) where both implementations
have an eligible run, prints the exact hardware SKU (`Hardware.sku`, e.g. 'NVIDIA H100 SXM5 80GB'), the
provider (`Environment.provider`; '-' when the source did not say), the environment's database id, each
implementation's fastest latency in that cohort (`ComparisonRow.latencyMs`) and their ratio (first / second:
>1 means the second is faster). Runs from different environments are never compared. The API computes
speedups only against a cohort's designated baseline; for that figure see plot_speedups.py.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

from graphql_client import nodes

# Cost 20 + 20 × 20 + 20 × 20 × 20 = 8,420, inside the server's limit (extensions.cost in each answer).
QUERY = """
query Compare($level: Int!, $after: String) {
  workloads(level: $level, first: 20, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      slug
      comparisons(first: 20) {
        environment { databaseId provider hardware { sku } }
        rows(first: 20) { latencyMs implementation { slug } }
      }
    }
  }
}
"""


class Compared(NamedTuple):
    workload: str
    sku: str
    provider: str | None
    environment_id: int
    first_ms: float
    second_ms: float


def compare(api: str, first: str, second: str, level: int) -> list[Compared]:
    rows = []
    for workload in nodes(api, QUERY, {"level": level}, "workloads"):
        for cohort in workload["comparisons"]:
            best: dict[str, float] = {}
            for row in cohort["rows"]:  # fastest first, so the first row of an implementation is its best
                best.setdefault(row["implementation"]["slug"], row["latencyMs"])
            if first in best and second in best:
                env = cohort["environment"]
                rows.append(Compared(workload["slug"], env["hardware"]["sku"], env["provider"], env["databaseId"],
                                     best[first], best[second]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    args = parser.parse_args()
    rows = compare(args.api, args.first, args.second, args.level)
    print(f"{'workload':<36} {'sku':<26} {'provider':<12} {'env':>5} {args.first:>14} {args.second:>14} {'ratio':>7}")
    for r in rows:
        print(f"{r.workload:<36} {r.sku:<26} {r.provider or '-':<12} {r.environment_id:>5} "
              f"{r.first_ms:>12.3f}ms {r.second_ms:>12.3f}ms {r.first_ms / r.second_ms:>6.2f}×")
    if not rows:
        print("no cohort has eligible runs of both implementations")


if __name__ == "__main__":
    main()
