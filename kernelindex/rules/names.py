"""names-v1: how names in run records are normalised and which are refused.

Hardware names are matched against the catalogue after normalisation: Unicode NFKC (full-width
"Ｈ１００" is "H100"), every format character removed (zero-width space and joiners, the bidi marks
and embeddings, the BOM: category Cf), every run of whitespace one space, no space at either end, and
compared case-blind. A name that still holds letters of another script next to Latin ones (Cyrillic
"Н100", Greek "Α100") is a look-alike, never a new product: `confusable` finds the Latin name it
imitates. Other names (implementation titles, source and protocol names, ...) get the same
whitespace rule; format characters in them are refused rather than silently dropped, since they
would be stored. An axis name is a Python identifier (it names a module-level variable of the
reference module), in ASCII.
"""

from __future__ import annotations

import re
import unicodedata

NAMES_VERSION = "names-v1"

_SPACES = re.compile(r"\s+")

# Letters of other scripts drawn like Latin ones (Unicode's confusables, the ones that matter for
# product names: capitals and the digits-like letters).
_LOOK_ALIKES = str.maketrans(
    {
        # Cyrillic
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
        "Х": "X", "У": "Y", "І": "I", "Ј": "J", "Ѕ": "S", "Ԛ": "Q", "Ԝ": "W", "З": "3", "Ь": "b",
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
        "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
        # Greek
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
        "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v", "α": "a", "ι": "i", "κ": "k", "ρ": "p",
    }
)


def _script(ch: str) -> str | None:
    """The script of a letter, from its Unicode name ('LATIN', 'CYRILLIC', ...); None for a non-letter."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def collapse_spaces(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def normalise_hardware_name(text: str) -> str:
    """NFKC, format characters removed, whitespace collapsed and stripped (case kept)."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return collapse_spaces(text)


def hardware_key(text: str) -> str:
    """What two spellings of one hardware name share: the normalised name, case-folded."""
    return normalise_hardware_name(text).casefold()


def scripts(text: str) -> set[str]:
    return {s for s in map(_script, text) if s}


def is_mixed_script(text: str) -> bool:
    """Letters of more than one script (Latin with Cyrillic, say): how a look-alike name gives itself away."""
    return len(scripts(text)) > 1


def skeleton(text: str) -> str:
    """The name with look-alike letters replaced by the Latin letters they imitate, as hardware_key."""
    return hardware_key(normalise_hardware_name(text).translate(_LOOK_ALIKES))


# A catalogue entry for a source that names only a family's product ("NVIDIA H100", GPU MODE KernelBot), never
# which variant ran: it holds the runs such a source reports, but no machine is one, so nothing is measured on it.
UNSTATED_VARIANT_SUFFIX = " (variant not stated)"


def is_unstated_variant(sku: str) -> bool:
    return sku.endswith(UNSTATED_VARIANT_SUFFIX)


def hardware_name_problem(text: str) -> str | None:
    """Why a hardware name is refused before it is looked up: empty, or letters of several scripts."""
    normal = normalise_hardware_name(text)
    if not normal:
        return "is empty once invisible characters and spaces are removed"
    found = scripts(normal)
    if len(found) > 1 or (found and "LATIN" not in found and skeleton(normal) != hardware_key(normal)):
        others = ", ".join(sorted(s.title() for s in found if s != "LATIN"))
        return f"{text!r} mixes {others} letters with Latin ones: a look-alike of a hardware name, not a name"
    return None


def name_problem(text: str) -> str | None:
    """Why a free-text name (title, source name, ...) is refused: empty, or holding invisible format characters."""
    if not collapse_spaces(text):
        return "is empty (or only spaces)"
    invisible = [ch for ch in text if unicodedata.category(ch) == "Cf"]
    if invisible:
        return f"holds an invisible format character (U+{ord(invisible[0]):04X} {unicodedata.name(invisible[0], '')})"
    return None


def axis_name_problem(name: str) -> str | None:
    if not name:
        return "an axis name is empty"
    if not (name.isascii() and name.isidentifier()):
        return f"axis name {name[:40]!r} is not an identifier (letters, digits and _, not starting with a digit)"
    return None


# Characters that change how the text around them is shown instead of being shown: C0 and C1 controls
# (ESC begins a terminal escape sequence, CR and BS rewrite what a terminal already shows), format
# characters (the bidi overrides, embeddings and isolates that reorder what follows them, as U+202E
# does; zero-width characters), line and paragraph separators, and lone surrogates.
_NOT_SHOWN = {"Cc": "a control character", "Cf": "an invisible format character", "Zl": "a line separator",
              "Zp": "a paragraph separator", "Cs": "a lone surrogate"}


def shown_text_problem(text: str) -> str | None:
    """Why a single line of text shown to people as it is stored (a submission's title, file name,
    licence or URL) is refused: it holds a character that is not shown but acts on what is (see
    _NOT_SHOWN), tab and newline included. As a predicate for "<name> …"; None when it is fine.
    name_problem, for record names, is unchanged: it refuses format characters only."""
    for ch in text:
        kind = _NOT_SHOWN.get(unicodedata.category(ch))
        if kind is not None:
            name = unicodedata.name(ch, "")
            return f"holds {kind} (U+{ord(ch):04X}{' ' + name if name else ''}): one line of visible text, please"
    return None
