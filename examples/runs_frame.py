"""Every run matching the export's filters as a typed DataFrame, through the Python client, with the URL of
the same runs as one CSV download.

    pip install './clients/python[pandas]'        # or [polars], for --polars
    python examples/runs_frame.py [--api http://127.0.0.1:8000] [--workload SLUG] [--hardware NAME] \
        [--status PASSED] [--polars] [--out runs.parquet]

The client (`kernelindex_client`, generated from schema.graphql and examples/operations) pages through
`Query.runs` (the RunTable operation) until `hasNextPage` is false; its frame names the columns as
/exports/runs.csv does (run_id, mean_ms, ci95_half_width_ms, …) and types each (Int64, float64, string,
boolean, UTC datetimes). Prints the export URL for the same filters, the column types, and each
implementation's fastest mean per hardware SKU; `--out` writes the frame as Parquet (needs pyarrow with
pandas).
"""

from __future__ import annotations

import argparse

try:
    from kernelindex_client import KernelIndex, RunStatus
except ImportError:
    raise SystemExit("the client is needed: pip install './clients/python[pandas]'") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    parser.add_argument("--workload")
    parser.add_argument("--hardware", help="a SKU, short name or family, e.g. 'NVIDIA H100'")
    parser.add_argument("--status", choices=[s.value for s in RunStatus])
    parser.add_argument("--polars", action="store_true", help="a polars DataFrame instead of pandas")
    parser.add_argument("--out", help="write the frame to this Parquet file")
    args = parser.parse_args()
    filters = {"workload": args.workload, "hardware": args.hardware,
               "status": RunStatus(args.status) if args.status else None}
    filters = {name: value for name, value in filters.items() if value is not None}
    with KernelIndex(args.api) as index:
        print(f"the same runs as CSV: {index.export_url('runs.csv', **filters)}")
        try:
            frame = index.runs_frame(backend="polars" if args.polars else "pandas", **filters)
        except ImportError as error:
            raise SystemExit(str(error)) from None
    print(f"{len(frame)} runs")
    types = frame.schema.items() if args.polars else frame.dtypes.items()
    print("columns: " + ", ".join(f"{name} ({dtype})" for name, dtype in types))
    print(f"{'implementation':<28} {'sku':<26} {'fastest mean_ms':>16}")
    if args.polars:
        import polars as pl

        best = (frame.drop_nulls("mean_ms").group_by("implementation", "hardware_sku").agg(pl.col("mean_ms").min())
                .sort("implementation", "hardware_sku").iter_rows())
    else:
        best = (frame.dropna(subset=["mean_ms"]).groupby(["implementation", "hardware_sku"])["mean_ms"].min()
                .reset_index().itertuples(index=False))
    for implementation, sku, mean_ms in best:
        print(f"{implementation:<28} {sku:<26} {mean_ms:>16.3f}")
    if args.out:
        frame.write_parquet(args.out) if args.polars else frame.to_parquet(args.out, index=False)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
