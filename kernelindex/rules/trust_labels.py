"""How far to trust a run, and the words that say so.

trust-v1, as the reference pages define it: a trust label "evidence · licence · source", a run is
stale when observed more than 180 days before now, and fixed caveats for the designated baseline
and for figures a source reported.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kernelindex.rules.facts import ImplementationFacts, RunFacts
from kernelindex.rules.instants import age

TRUST_VERSION = "trust-v1"
STALE_AFTER_DAYS = 180

EVIDENCE_WORDS = {"reported": "Reported", "measured": "Measured"}

BASELINE_CAVEAT = "The source's designated baseline implementation."
REPORTED_CAVEAT = "Reported by source; not independently reproduced."
EXACT_CONFIGURATION_NOTE = "Measured exactly what you asked."
NO_INSTALL_RECIPE = "no install recipe"
NO_PACKAGE = "No package · vendor the source"


def evidence_word(evidence: str) -> str:
    return EVIDENCE_WORDS.get(evidence, evidence.capitalize())


def has_source(impl: ImplementationFacts) -> bool:
    return impl.source_availability in ("mirrored", "upstream")


def licence_word(impl: ImplementationFacts) -> str:
    return impl.licence or "licence unknown"


def availability_label(impl: ImplementationFacts) -> str:
    """'MIT · source' (licence, and whether source is available)."""
    return f"{licence_word(impl)} · {'source' if has_source(impl) else 'no source'}"


def availability_detail(impl: ImplementationFacts) -> str:
    return {"mirrored": "source mirrored", "upstream": "source upstream"}.get(impl.source_availability, "no public source")


def install_label(impl: ImplementationFacts) -> str:
    return impl.install_recipe or NO_INSTALL_RECIPE


def package_label(impl: ImplementationFacts) -> str:
    return NO_PACKAGE if not impl.install_recipe else "Install recipe available"


def trust_label(evidence: str, impl: ImplementationFacts) -> str:
    """'Reported · MIT · source'."""
    return f"{evidence_word(evidence)} · {availability_label(impl)}"


def is_stale(observed_at: datetime, now: datetime, after_days: int = STALE_AFTER_DAYS) -> bool:
    # instants.age: a stored ±infinity reads back naive and at the ends of the calendar; neither may raise here.
    return age(observed_at, now) > timedelta(days=after_days)


def caveats(run: RunFacts) -> list[str]:
    notes = []
    if run.implementation.is_baseline:
        notes.append(BASELINE_CAVEAT)
    if run.evidence == "reported":
        notes.append(REPORTED_CAVEAT)
    return notes


def implementation_line(impl: ImplementationFacts) -> str:
    """'PyTorch · MIT · python' as under a headline."""
    return f"{impl.framework} · {licence_word(impl)} · {impl.language}"
