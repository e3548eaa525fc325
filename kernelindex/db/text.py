"""Text PostgreSQL cannot take: one rule for every way text comes in (GraphQL arguments, mutations,
export filters, ingest files), so each refuses the same strings with the same words."""

from __future__ import annotations


def text_problem(text: str) -> str | None:
    """Why this text cannot be stored or compared, as a predicate for "<name> ...", or None.
    PostgreSQL refuses NUL in text; asyncpg cannot encode a surrogate that is not part of a pair."""
    if "\x00" in text:
        return "must not contain NUL characters (\\u0000), which PostgreSQL cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain an unpaired surrogate (\\ud800-\\udfff): a lone surrogate is not Unicode text"
    return None
