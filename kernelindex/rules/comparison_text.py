"""The words of a cohort comparison on a workload page: its title, and each row's notes in order."""

from __future__ import annotations

from collections.abc import Iterable

from kernelindex.rules.facts import RunFacts
from kernelindex.rules.trust_labels import EXACT_CONFIGURATION_NOTE, caveats

SOURCE_NATIVE_TITLE = "Source-native comparison"
MIXED_SOURCES_TITLE = "Comparison"


def comparison_title(runs: Iterable[RunFacts]) -> str:
    """'Source-native comparison' when every row comes from one source: its figures were taken
    together and compare like for like; otherwise plain 'Comparison'."""
    return SOURCE_NATIVE_TITLE if len({r.source.id for r in runs}) == 1 else MIXED_SOURCES_TITLE


def row_notes(run: RunFacts, verdict: str | None, exact_configuration: bool) -> list[str]:
    """A row's sentences, in reading order: the verdict against the baseline, whether it measured
    exactly the configuration asked for, then the run's caveats."""
    notes = [verdict] if verdict else []
    if exact_configuration:
        notes.append(EXACT_CONFIGURATION_NOTE)
    notes.extend(caveats(run))
    return notes
