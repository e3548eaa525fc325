"""Pull every current record on NVIDIA H100 hardware into a pandas DataFrame and plot it.

    pip install -e '.[plot]' './clients/python[pandas]'
    python examples/h100_records_pandas.py [--api http://127.0.0.1:8000] [--hardware "NVIDIA H100"] \
        [--out h100.png] [--csv h100.csv]

Notebook-style: `records_frame(api)` returns the DataFrame (import it from a notebook started in this
folder). It asks through the typed Python client (clients/python, `kernelindex_client`): its
`KernelIndex.records_frame` pages through `Query.records(hardware:)` (the HardwareRecordTable operation in
examples/operations) until `hasNextPage` is false, and types every column (Int64 ids, float64 latencies,
UTC datetimes). `hardware` is a SKU or a family; the default, the family 'NVIDIA H100', matches every H100
SKU (SXM, PCIe, NVL, ...). One row per record: a workload's fastest eligible run in one environment. The plot shows each
workload's record latency per environment, labelled by exact SKU and provider. With `--out` it renders with
matplotlib's Agg backend and writes a PNG, so it needs no display; without it, it opens a window.
"""

from __future__ import annotations

import argparse

try:
    import matplotlib
    import pandas as pd

    from kernelindex_client import KernelIndex
except ImportError:
    raise SystemExit("pandas, matplotlib and the client are needed: pip install -e '.[plot]' './clients/python[pandas]'") from None

# The client's record columns this script writes, under the names it has always written them.
RENAMED = {"hardware_sku": "sku", "hardware_family": "family", "ci95_half_width_ms": "ci95_ms", "num_trials": "trials"}
COLUMNS = ["workload", "level", "sku", "family", "provider", "environment_id", "implementation", "latency_ms",
           "ci95_ms", "trials", "evidence", "observed_at", "run_id"]


def records_frame(api: str, hardware: str = "NVIDIA H100") -> pd.DataFrame:
    """Every record on `hardware` (a SKU or a family), one row each, in the API's order."""
    with KernelIndex(api) as index:
        frame = index.records_frame(hardware=hardware)
    return frame.rename(columns=RENAMED)[COLUMNS]


def plot(frame: pd.DataFrame, title: str):  # -> matplotlib Figure
    """Horizontal bars: one group per workload, one bar per environment (SKU · provider · env id).

    Each (workload, environment) pair has one record, so the pivot never has to merge two rows.
    """
    import matplotlib.pyplot as plt  # after the backend is chosen in main()

    where = frame["sku"] + " · " + frame["provider"].fillna("-") + " · env " + frame["environment_id"].astype(str)
    framed = frame.assign(where=where)
    table = framed.pivot(index="workload", columns="where", values="latency_ms")
    errors = framed.pivot(index="workload", columns="where", values="ci95_ms")  # NaN (no bar) where not reported
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.35 * len(table) * len(table.columns)))
    table.plot.barh(ax=ax, xerr=errors, capsize=2)
    ax.set_xlabel("record latency (ms; error bar: 95% interval)")
    ax.set_ylabel("")
    ax.set_title(title)
    ax.legend(title="SKU · provider · environment", fontsize=7)
    fig.tight_layout()
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    parser.add_argument("--hardware", default="NVIDIA H100", help="a SKU or a family (default: %(default)s)")
    parser.add_argument("--out", help="write the plot to this PNG (Agg backend, no display needed)")
    parser.add_argument("--csv", help="also write the DataFrame to this CSV file")
    args = parser.parse_args()
    if args.out:
        matplotlib.use("Agg")
    frame = records_frame(args.api, args.hardware)
    print(f"{len(frame)} records on {args.hardware}, {frame['workload'].nunique()} workloads; columns: "
          + ", ".join(frame.columns))
    for sku, count in frame.groupby("sku").size().items():
        print(f"  {sku}: {count}")
    if args.csv:
        frame.to_csv(args.csv, index=False)
    if frame.empty:
        raise SystemExit(f"nothing to plot: no records on {args.hardware}")
    fig = plot(frame, f"Records on {args.hardware}")
    if args.out:
        fig.savefig(args.out, dpi=150)
        print(f"wrote {args.out}")
    else:
        import matplotlib.pyplot as plt

        plt.show()


if __name__ == "__main__":
    main()
