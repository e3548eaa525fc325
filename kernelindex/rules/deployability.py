"""Whether an implementation can be taken into production as it stands.

deployability-v1: deployable only with source available (mirrored or upstream), a known SPDX
licence and an install recipe. Otherwise the reasons, in this order, as codes and words:
no_public_source "no public source", no_install_recipe "no install recipe", licence_unknown
"licence unknown".

A licence is known when it is a well-formed SPDX identifier or expression (identifiers of letters,
digits, ".", "-", "+" and ":", joined by AND / OR, an optional "WITH exception", parentheses), none of
whose identifiers is NOASSERTION, NONE or UNKNOWN. "MIT License" (a name, not an identifier) is not.
Permissive: one of PERMISSIVE_LICENCES (compared case-insensitively, as SPDX does), or an OR
expression without parentheses or AND whose every alternative is permissive (the user may pick any
of them). Anything else, including an unknown licence, is not called permissive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelindex.rules.facts import ImplementationFacts
from kernelindex.rules.trust_labels import has_source

DEPLOYABILITY_VERSION = "deployability-v1"

PERMISSIVE_LICENCES = {"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "BSL-1.0"}
_PERMISSIVE_FOLDED = {licence.casefold() for licence in PERMISSIVE_LICENCES}

NO_PUBLIC_SOURCE = "no_public_source"
NO_INSTALL_RECIPE = "no_install_recipe"
LICENCE_UNKNOWN = "licence_unknown"
REASON_WORDS = {
    NO_PUBLIC_SOURCE: "no public source",
    NO_INSTALL_RECIPE: "no install recipe",
    LICENCE_UNKNOWN: "licence unknown",
}

_NOT_A_LICENCE = {"noassertion", "none", "unknown"}
_SPDX_TOKEN = re.compile(r"^[A-Za-z0-9.\-+:]+$")


def _tokens(text: str) -> list[str]:
    return text.replace("(", " ( ").replace(")", " ) ").split()


def _is_spdx_expression(tokens: list[str]) -> bool:
    """expression := term ((AND | OR) term)*; term := "(" expression ")" | id [WITH id]."""
    position = 0

    def identifier() -> bool:
        nonlocal position
        if position < len(tokens) and tokens[position] not in ("AND", "OR", "WITH", "(", ")") and _SPDX_TOKEN.match(
            tokens[position]
        ) and tokens[position].casefold() not in _NOT_A_LICENCE:
            position += 1
            return True
        return False

    def term() -> bool:
        nonlocal position
        if position < len(tokens) and tokens[position] == "(":
            position += 1
            if not expression() or position >= len(tokens) or tokens[position] != ")":
                return False
            position += 1
            return True
        if not identifier():
            return False
        if position < len(tokens) and tokens[position] == "WITH":
            position += 1
            return identifier()
        return True

    def expression() -> bool:
        nonlocal position
        if not term():
            return False
        while position < len(tokens) and tokens[position] in ("AND", "OR"):
            position += 1
            if not term():
                return False
        return True

    return expression() and position == len(tokens)


def is_known_licence(licence: str | None) -> bool:
    """A non-empty SPDX identifier or well-formed expression, other than NOASSERTION, NONE or UNKNOWN."""
    if licence is None:
        return False
    tokens = _tokens(licence.strip())
    return bool(tokens) and _is_spdx_expression(tokens)


def is_permissive(licence: str | None) -> bool:
    if licence is None or not is_known_licence(licence):
        return False
    text = licence.strip()
    if "(" in text or " AND " in text or " WITH " in text:
        return False
    return all(part.strip().casefold() in _PERMISSIVE_FOLDED for part in text.split(" OR "))


@dataclass(frozen=True)
class Reason:
    code: str
    words: str


@dataclass(frozen=True)
class Deployability:
    implementation_id: int
    deployable: bool
    reasons: tuple[Reason, ...]
    permissive: bool

    @property
    def words(self) -> str:
        """'Deployable' or 'Not deployable: no public source, licence unknown'."""
        if self.deployable:
            return "Deployable"
        return "Not deployable: " + ", ".join(r.words for r in self.reasons)


def deployability(impl: ImplementationFacts) -> Deployability:
    reasons = []
    if not has_source(impl):
        reasons.append(Reason(NO_PUBLIC_SOURCE, REASON_WORDS[NO_PUBLIC_SOURCE]))
    if not (impl.install_recipe or "").strip():
        reasons.append(Reason(NO_INSTALL_RECIPE, REASON_WORDS[NO_INSTALL_RECIPE]))
    if not is_known_licence(impl.licence):
        reasons.append(Reason(LICENCE_UNKNOWN, REASON_WORDS[LICENCE_UNKNOWN]))
    return Deployability(impl.id, not reasons, tuple(reasons), is_permissive(impl.licence))
