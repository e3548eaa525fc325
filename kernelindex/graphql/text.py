"""Caps on the text a field returns, so that no response grows with what was stored.

Long text (a workload's reference source) is served in pieces of at most settings.max_text_bytes
UTF-8 bytes, from a byte offset the client chooses; its size is a field of its own. Short text
(a failure reason, an install recipe, a description) is cut at SHORT_TEXT_BYTES with a marker.
Both count in the query cost by their limit in KiB (kernelindex.graphql.cost), so that the cost
limit bounds the response size however often a query repeats them.
"""

from __future__ import annotations

from kernelindex.graphql.errors import UserInputError

SHORT_TEXT_BYTES = 2048
SHORT_TEXT_KIB = 2
CUT_MARKER = " … [cut at 2 KiB]"
# Raw samples of one run shown at most: ~16 KiB of JSON; num_trials says how many were stored.
MAX_SAMPLES_SHOWN = 1000
SAMPLES_KIB = 16


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def text_size(text: str) -> int:
    """UTF-8 size in bytes, without encoding ASCII text."""
    return len(text) if text.isascii() else len(text.encode())


def text_piece(text: str, offset: int, limit: int) -> str:
    """At most `limit` UTF-8 bytes of `text` from byte `offset`, both ends on character boundaries
    (an offset inside a character starts at the next one; the piece ends before a character that
    would not fit). The next piece starts at offset + the piece's UTF-8 size."""
    if offset < 0:
        raise UserInputError(f"offset must be at least 0, got {offset}")
    if text.isascii():
        return text[offset:offset + limit]
    # At most offset + limit characters hold the bytes asked for: encode no more than those.
    data = text[: offset + limit].encode()
    start = offset
    while start < len(data) and _continuation(data[start]):
        start += 1
    end = min(len(data), start + limit)
    while start < end < len(data) and _continuation(data[end]):
        end -= 1
    return data[start:end].decode()


def short_text(text: str | None) -> str | None:
    """`text`, or its first SHORT_TEXT_BYTES bytes with CUT_MARKER when it is longer."""
    if text is None or text_size(text) <= SHORT_TEXT_BYTES:
        return text
    return text_piece(text, 0, SHORT_TEXT_BYTES - len(CUT_MARKER.encode())) + CUT_MARKER
