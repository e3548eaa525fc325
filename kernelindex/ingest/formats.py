"""What kind of file an ingest command was handed, told from its first bytes.

`ingest runs` takes run records (kernelindex.run/1 JSON Lines). Handed another source's file, reading it
line by line would print one JSON error per line (thousands for a KernelBench timing file) and say nothing
useful; instead the command names what the file is and the command that reads it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# Enough to see a format's signature; never the whole file (it may be gigabytes).
SNIFF_BYTES = 64 * 1024

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
# A KernelBench timing file: one JSON object of levels (`{"level1": {"1_Square….py": {"mean": …`), pretty-printed
# upstream (H100_Modal) or on one line (H100_PCIe_LambdaLabs).
_TIMING = re.compile(rb'\A\s*\{\s*"level\d+"\s*:\s*\{\s*"\d+_[^"]*\.py"\s*:')
# Liger-Kernel's all_benchmark_data.csv header.
_LIGER_COLUMNS = {"kernel_name", "kernel_provider", "metric_name", "y_value_50"}


@dataclass(frozen=True)
class ForeignFormat:
    what: str  # what the file is, in words
    use: str  # what to do with it instead

    def message(self, label: str) -> str:
        return f"{label}: not a file of run records: it is {self.what}; {self.use}"


def foreign_format(head: bytes) -> ForeignFormat | None:
    """The format of a file that is not run records, from its first bytes; None when it may be run records
    (the reader then judges it line by line, as ever)."""
    if head.startswith(ZSTD_MAGIC):
        return ForeignFormat(
            "zstd-compressed (a kernelindex.com catalogue export, *.jsonl.zst, is)",
            "import a catalogue export with: kernelindex ingest kernelindex-export FILE",
        )
    if head.startswith(GZIP_MAGIC):
        return ForeignFormat("gzip-compressed", "decompress it first (gunzip -c FILE | kernelindex ingest runs -)")
    if _TIMING.match(head):
        return ForeignFormat(
            "a KernelBench baseline timing file (results/timing/…/baseline_time_*.json)",
            "import the KernelBench checkout that holds it: kernelindex ingest kernelbench CHECKOUT "
            "--revision REV --observed YYYY-MM-DD",
        )
    first = head.split(b"\n", 1)[0]
    header = {column.strip().strip('"') for column in first.decode("utf-8", "replace").split(",")}
    if _LIGER_COLUMNS <= header:
        return ForeignFormat(
            "Liger-Kernel's benchmark results (all_benchmark_data.csv)",
            "import it with: kernelindex ingest liger FILE --revision REV --observed YYYY-MM-DD",
        )
    try:
        line = json.loads(first)
    except ValueError:
        return None
    if isinstance(line, dict) and set(line) == {"table", "row"}:
        return ForeignFormat(
            "a kernelindex.com catalogue export (kernelindex.dev/v1alpha1 lines of {\"table\", \"row\"})",
            "import it with: kernelindex ingest kernelindex-export FILE",
        )
    return None


def sniff(path: Path) -> ForeignFormat | None:
    """foreign_format of a file's first SNIFF_BYTES (a file that cannot be read is the reader's to report)."""
    try:
        with path.open("rb") as handle:
            return foreign_format(handle.read(SNIFF_BYTES))
    except OSError:
        return None
