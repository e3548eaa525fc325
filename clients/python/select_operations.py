"""The saved operations the Python client is generated from: every file of examples/operations but those
holding a subscription (the client is synchronous, and ariadne-codegen generates subscriptions only for an
async client; frontends take those from examples/operations/live.graphql).

    python clients/python/select_operations.py SOURCE_DIR TARGET_DIR

copies the selected files into TARGET_DIR (emptied first). `make client` and tests/clients use it."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

SUBSCRIPTION = re.compile(r"^\s*subscription\b", re.MULTILINE)


def select_operations(source: Path, target: Path) -> list[Path]:
    """Copy the operation files of `source` that hold no subscription into `target`; returns the copies."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    copied = []
    for path in sorted(source.glob("*.graphql")):
        if not SUBSCRIPTION.search(path.read_text(encoding="utf-8")):
            copied.append(Path(shutil.copy2(path, target / path.name)))
    return copied


if __name__ == "__main__":
    select_operations(Path(sys.argv[1]), Path(sys.argv[2]))
