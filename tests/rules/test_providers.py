"""providers-v1: one name per provider, whatever the spelling."""

from __future__ import annotations

import pytest

from kernelindex.rules.providers import PROVIDER_SPELLINGS, PROVIDERS_VERSION, normalise_provider


def test_version():
    assert PROVIDERS_VERSION == "providers-v1"


@pytest.mark.parametrize(
    "written, name",
    [
        ("modal", "Modal"), ("Modal", "Modal"), (" MODAL ", "Modal"), ("Modal Labs", "Modal"),
        ("LambdaLabs", "Lambda Labs"), ("Lambda Labs", "Lambda Labs"), ("lambda", "Lambda Labs"), ("lambda_labs", "Lambda Labs"),
        ("lambda-labs", "Lambda Labs"), ("LAMBDA\tLABS", "Lambda Labs"),
        ("AWS", "AWS"), ("aws", "AWS"), (" Aws ", "AWS"),
        ("GCP", "Google Cloud"), ("gcp", "Google Cloud"), ("Google Cloud", "Google Cloud"), ("google  cloud", "Google Cloud"),
        ("Azure", "Microsoft Azure"),
    ],
)
def test_known_spellings_are_one_provider(written, name):
    assert normalise_provider(written) == name


def test_unknown_names_are_trimmed_and_their_whitespace_collapsed():
    assert normalise_provider("CorpusCloud") == "CorpusCloud"
    assert normalise_provider("  Corpus \t  Cloud\n") == "Corpus Cloud"
    assert normalise_provider("my-lab") == "my-lab"  # case and punctuation of an unknown name are kept


def test_blank_is_no_provider():
    assert normalise_provider(None) is None
    assert normalise_provider("") is None
    assert normalise_provider("   ") is None


def test_normalising_is_idempotent_and_canonical_names_are_fixed_points():
    for name in PROVIDER_SPELLINGS:
        assert normalise_provider(name) == name
        assert normalise_provider(normalise_provider(f"  {name.lower()} ")) == name


def test_no_spelling_means_two_providers():
    seen: dict[str, str] = {}
    for name, spellings in PROVIDER_SPELLINGS.items():
        for spelling in spellings:
            assert seen.setdefault(spelling, name) == name, spelling
