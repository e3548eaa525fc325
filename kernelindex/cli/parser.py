"""The `kernelindex` command line's parser: every option's help says its default, and the version.

The parser class passes itself on to every subcommand (argparse's add_subparsers makes subparsers of
the parent's class), so a command added anywhere under `kernelindex` gets the same help without asking.
"""

from __future__ import annotations

import argparse
from importlib import metadata

DISTRIBUTION = "kernelindex"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed: pip install -e .)"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: …)" after each option's help, but only where it tells something: not for
    flags (off unless given), options with no default (None), repeatable ones that start empty, or help
    that already states its default in its own words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if action.default in (None, False, [], "", argparse.SUPPRESS) or "default" in help_text.lower():
            return help_text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
