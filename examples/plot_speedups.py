"""Plot each workload's speedup of an implementation over its cohort's baseline, per environment.

    pip install -e '.[plot]'
    python examples/plot_speedups.py torch_compile_inductor --level 3 --out speedups.png [--data speedups.json]

Needs matplotlib (the `plot` extra). Every bar is the API's own figure, never a division done here:
`ComparisonRow.speedupVsBaseline` (baseline latency / this latency, >1 is faster) of the implementation's
fastest row in the cohort, with `ComparisonRow.speedupInterval` (its 95% interval) as the error bar. The
baseline is the one the API designates for the cohort (the fastest run of a baseline implementation), and a
cohort is one environment, configuration and protocol, so the plot never compares runs from different
environments. Prints one line per bar (SKU and provider apart); `--data` also writes the plotted figures
as JSON, exactly as the API returned them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from graphql_client import nodes

# Cost 20 + 20 × 20 + 20 × 20 × 20 = 8,420, inside the server's limit (extensions.cost in each answer).
QUERY = """
query Speedups($level: Int!, $after: String) {
  workloads(level: $level, first: 20, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      slug
      comparisons(first: 20) {
        environment { databaseId provider hardware { sku } }
        configuration { display }
        rows(first: 20) { isBaseline speedupVsBaseline speedupInterval implementation { slug } }
      }
    }
  }
}
"""


def speedups(api: str, implementation: str, level: int) -> list[dict[str, Any]]:
    """One point per cohort where `implementation` has a row and the API gives it a speedup."""
    points = []
    for workload in nodes(api, QUERY, {"level": level}, "workloads"):
        for cohort in workload["comparisons"]:
            rows = cohort["rows"]
            # Rows are fastest first, so the first row of the implementation is its best in the cohort.
            mine = next((r for r in rows if r["implementation"]["slug"] == implementation), None)
            if mine is None or mine["speedupVsBaseline"] is None:  # absent, or no baseline in this cohort
                continue
            baseline = next((r["implementation"]["slug"] for r in rows if r["isBaseline"]), "baseline")
            env = cohort["environment"]
            points.append({
                "workload": workload["slug"], "configuration": cohort["configuration"]["display"],
                "sku": env["hardware"]["sku"], "provider": env["provider"], "environmentId": env["databaseId"],
                "baseline": baseline, "speedupVsBaseline": mine["speedupVsBaseline"],
                "speedupInterval": mine["speedupInterval"],
            })
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("implementation")
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    parser.add_argument("--out", default="speedups.png")
    parser.add_argument("--data", help="also write the plotted figures to this JSON file")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")  # writes a file, so no display is needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("matplotlib is not installed: pip install -e '.[plot]'") from None
    points = speedups(args.api, args.implementation, args.level)
    if not points:
        raise SystemExit(f"nothing to plot: no level-{args.level} cohort gives {args.implementation} a speedup "
                         "against a baseline")
    print(f"{'workload':<36} {'sku':<26} {'provider':<12} {'env':>5} {'baseline':<14} {'speedup':>8}  95% interval")
    for p in points:
        low_high = "-" if p["speedupInterval"] is None else "{:.3f}–{:.3f}".format(*p["speedupInterval"])
        print(f"{p['workload']:<36} {p['sku']:<26} {p['provider'] or '-':<12} {p['environmentId']:>5} "
              f"{p['baseline']:<14} {p['speedupVsBaseline']:>7.3f}×  {low_high}")
    values = [p["speedupVsBaseline"] for p in points]
    # Error bars from the API's interval; a point without one (no samples or trial counts) gets none.
    errors = [[v - (p["speedupInterval"] or [v, v])[0] for v, p in zip(values, points)],
              [(p["speedupInterval"] or [v, v])[1] - v for v, p in zip(values, points)]]
    labels = [f"{p['workload'].split('-', 3)[-1]}\n{p['sku']} ({p['provider'] or '-'})" for p in points]
    fig, ax = plt.subplots(figsize=(max(6, len(points) * 0.8), 4.5))
    ax.bar(range(len(points)), values, yerr=errors, capsize=3,
           color=["tab:green" if v > 1 else "tab:red" for v in values])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(points)), labels, rotation=60, ha="right", fontsize=7)
    baselines = sorted({p["baseline"] for p in points})
    ax.set_ylabel(f"speedup over {', '.join(baselines)} (×)")
    ax.set_title(f"{args.implementation}, level {args.level}: speedupVsBaseline (API)", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=150)
    if args.data:
        with open(args.data, "w") as f:
            json.dump(points, f, indent=1)
    print(f"wrote {args.out} ({len(points)} cohorts)")


if __name__ == "__main__":
    main()
