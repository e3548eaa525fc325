"""Fetch every current record on NVIDIA H100 hardware and write it as CSV.

    python examples/h100_records_csv.py [--api http://127.0.0.1:8000] [--hardware "NVIDIA H100"] > h100.csv

Uses only the standard library (and graphql_client.py beside it).
"""

from __future__ import annotations

import argparse
import csv
import sys

from graphql_client import nodes

QUERY = """
query Records($hardware: String!, $after: String) {
  records(hardware: $hardware, first: 100, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      workload { slug name level }
      records { label latencyMs implementation { slug } environment { provider hardware { sku } }
                run { numTrials ciHalfWidthMs evidence observedAt source { name revision } } }
    }
  }
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    parser.add_argument("--hardware", default="NVIDIA H100")
    args = parser.parse_args()
    out = csv.writer(sys.stdout)
    out.writerow(["workload", "level", "environment", "sku", "provider", "implementation", "latency_ms", "ci95_ms",
                  "trials", "evidence", "observed_at", "source", "source_revision"])
    for node in nodes(args.api, QUERY, {"hardware": args.hardware}, "records"):
        for r in node["records"]:
            run = r["run"]
            out.writerow([node["workload"]["slug"], node["workload"]["level"], r["label"],
                          r["environment"]["hardware"]["sku"], r["environment"]["provider"], r["implementation"]["slug"],
                          r["latencyMs"], run["ciHalfWidthMs"], run["numTrials"], run["evidence"], run["observedAt"],
                          run["source"]["name"], run["source"]["revision"]])


if __name__ == "__main__":
    main()
