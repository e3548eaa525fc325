"""`--set NAME=INT` parsing, shared by `python -m benchmarks` and `kernelindex bench` (torch-free, so
the kernelindex CLI can import it without importing torch)."""

from __future__ import annotations

import argparse


def parse_binding(text: str) -> tuple[str, int]:
    name, separator, value = text.partition("=")
    name = name.strip()
    if not separator or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, got {text!r}")
    try:
        return name, int(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not an integer") from None
