"""deployability-v1: source, a known SPDX licence and an install recipe; permissive licences."""

from __future__ import annotations

import pytest

from kernelindex.rules.deployability import (
    DEPLOYABILITY_VERSION,
    PERMISSIVE_LICENCES,
    deployability,
    is_known_licence,
    is_permissive,
)
from tests.rules.factories import implementation, seed_implementations


def test_version_and_set():
    assert DEPLOYABILITY_VERSION == "deployability-v1"
    assert PERMISSIVE_LICENCES == {"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "BSL-1.0"}


def test_deployable_with_all_three():
    d = deployability(implementation(licence="Apache-2.0", source_availability="upstream", install_recipe="pip install x"))
    assert d.deployable and d.reasons == () and d.permissive
    assert d.words == "Deployable"


@pytest.mark.parametrize(
    "kw, codes",
    [
        ({"source_availability": "none"}, ["no_public_source"]),
        ({"install_recipe": None}, ["no_install_recipe"]),
        ({"install_recipe": "   "}, ["no_install_recipe"]),
        ({"licence": None}, ["licence_unknown"]),
        ({"licence": "NOASSERTION"}, ["licence_unknown"]),
        ({"source_availability": "none", "install_recipe": None, "licence": None},
         ["no_public_source", "no_install_recipe", "licence_unknown"]),
    ],
)
def test_reasons(kw, codes):
    base = {"licence": "MIT", "source_availability": "mirrored", "install_recipe": "pip install x"}
    d = deployability(implementation(**{**base, **kw}))
    assert not d.deployable
    assert [r.code for r in d.reasons] == codes


def test_reason_words():
    d = deployability(implementation(licence=None, source_availability="none", install_recipe=None))
    assert [r.words for r in d.reasons] == ["no public source", "no install recipe", "licence unknown"]
    assert d.words == "Not deployable: no public source, no install recipe, licence unknown"


def test_seed_implementations_lack_an_install_recipe():
    for impl in seed_implementations().values():
        d = deployability(impl)
        assert [r.code for r in d.reasons] == ["no_install_recipe"]
        assert d.permissive  # MIT


def test_a_copyleft_licence_is_known_but_not_permissive():
    d = deployability(implementation(licence="GPL-3.0-only", install_recipe="pip install x"))
    assert d.deployable and not d.permissive


@pytest.mark.parametrize("licence", sorted(PERMISSIVE_LICENCES) + ["mit", "MIT OR Apache-2.0"])
def test_permissive(licence):
    assert is_permissive(licence)


@pytest.mark.parametrize(
    "licence",
    [None, "", "GPL-3.0-only", "LicenseRef-Proprietary", "MIT AND GPL-2.0-only", "MIT OR GPL-2.0-only",
     "(MIT OR Apache-2.0)", "Apache-2.0 WITH LLVM-exception", "unknown", "MIT License"],
)
def test_not_permissive(licence):
    assert not is_permissive(licence)


def test_known_licences():
    assert is_known_licence("LicenseRef-Proprietary")
    assert is_known_licence("(MIT OR Apache-2.0)")
    assert is_known_licence("Apache-2.0 WITH LLVM-exception")
    for unknown in (None, "", "  ", "NONE", "unknown", "MIT License", "(MIT", "AND"):
        assert not is_known_licence(unknown), unknown
