"""One name per provider: `modal`, `Modal` and ` MODAL ` are one provider.

providers-v1: a known spelling (compared without case, spaces, hyphens, underscores or dots) maps to
its one name; an unknown name is kept as written, trimmed, with runs of whitespace made one space;
an empty or blank name is no provider (None). The provider is part of an environment's
fingerprint, so every path that stores one (runs files, submitRuns, KernelBench timings, the seed)
goes through normalise_provider.
"""

from __future__ import annotations

import re

PROVIDERS_VERSION = "providers-v1"

# The one name of each known provider, and the spellings that mean it (as _key writes them).
PROVIDER_SPELLINGS: dict[str, tuple[str, ...]] = {
    "AWS": ("aws", "amazon", "amazonwebservices", "ec2"),
    "Google Cloud": ("gcp", "googlecloud", "googlecloudplatform", "gce"),
    "Lambda Labs": ("lambdalabs", "lambda", "lambdacloud"),
    "Modal": ("modal", "modallabs"),
    "Microsoft Azure": ("azure", "microsoftazure"),
    "CoreWeave": ("coreweave",),
    "RunPod": ("runpod",),
    "Oracle Cloud": ("oci", "oraclecloud", "oraclecloudinfrastructure"),
}

_KNOWN = {spelling: name for name, spellings in PROVIDER_SPELLINGS.items() for spelling in spellings}
_NOT_IN_KEY = re.compile(r"[\s\-_.]+")
_WHITESPACE = re.compile(r"\s+")


def _key(name: str) -> str:
    return _NOT_IN_KEY.sub("", name).casefold()


def normalise_provider(name: str | None) -> str | None:
    """'modal' → 'Modal', 'LambdaLabs' → 'Lambda Labs', 'gcp' → 'Google Cloud'; an unknown name
    trimmed with its whitespace collapsed ('  Corpus   Cloud ' → 'Corpus Cloud'); '' → None."""
    if name is None:
        return None
    collapsed = _WHITESPACE.sub(" ", name).strip()
    if not collapsed:
        return None
    return _KNOWN.get(_key(collapsed), collapsed)
