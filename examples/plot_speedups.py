"""Plot each workload's speedup of an implementation over the baseline, per environment.

    pip install -e '.[plot]'
    python examples/plot_speedups.py torch_compile_inductor --level 3 --out speedups.png

Needs matplotlib (the `plot` extra). The speedup is the API's own figure (baseline latency / run
latency inside one cohort), so the plot never compares runs from different environments.
"""

from __future__ import annotations

import argparse

from compare_implementations import compare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("implementation")
    parser.add_argument("--baseline", default="torch_eager")
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    parser.add_argument("--out", default="speedups.png")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("matplotlib is not installed: pip install -e '.[plot]'") from None
    rows = compare(args.api, args.baseline, args.implementation, args.level)
    if not rows:
        raise SystemExit("nothing to plot: no cohort has eligible runs of both implementations")
    labels = [f"{slug.split('-', 3)[-1]}\n{where}" for slug, where, _, _ in rows]
    speedups = [base / impl for _, _, base, impl in rows]
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.6), 4))
    ax.bar(range(len(rows)), speedups, color=["tab:green" if s > 1 else "tab:red" for s in speedups])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(f"speedup over {args.baseline} (×)")
    ax.set_title(f"{args.implementation} vs {args.baseline}, level {args.level}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=150)
    print(f"wrote {args.out} ({len(rows)} cohorts)")


if __name__ == "__main__":
    main()
