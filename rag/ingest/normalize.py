"""Text normalization shared by every parser.

``normalize_text`` is idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
Parsers normalize each block and join blocks with ``"\\n"`` or ``"\\n\\n"``, so the joined
text is itself normalized and every offset recorded while joining stays valid.
"""

from __future__ import annotations

import re
import unicodedata

# Zero-width and bidirectional formatting characters (Unicode TR9 / Cf). They are invisible,
# break keyword matching, and bidi overrides can disguise text ("Trojan Source").
INVISIBLE_CHARS = (
    "\u00ad"  # soft hyphen
    "\u061c"  # Arabic letter mark
    "\u180e"  # Mongolian vowel separator
    "\u200b-\u200f"  # zero-width space/non-joiner/joiner, LRM, RLM
    "\u202a-\u202e"  # LRE, RLE, PDF, LRO, RLO
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # LRI, RLI, FSI, PDI
    "\ufeff"  # BOM / zero-width no-break space
)
# C0 controls except \t and \n (\r is translated first), DEL, C1 controls.
CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Horizontal spaces folded into a plain space.
SPACE_CHARS = " \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"

_DROP_RE = re.compile(f"[{CONTROL_CHARS}{INVISIBLE_CHARS}]+")
_NBSP_RE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f]")
_SPACE_RUN_RE = re.compile(f"[{SPACE_CHARS}]{{2,}}")
_LINE_EDGE_RE = re.compile(f"[{SPACE_CHARS}]*\n[{SPACE_CHARS}]*")
_MANY_NEWLINES_RE = re.compile("\n{3,}")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# CR, vertical tab, form feed (page break in text files), NEL and the Unicode separators.
_LINE_BREAKS = str.maketrans({"\r": "\n", "\x0b": "\n", "\x0c": "\n", "\x85": "\n", "\u2028": "\n", "\u2029": "\n\n"})


def normalize_text(text: str) -> str:
    """NFC, ``\\n`` line ends, no controls or invisible characters, tidy whitespace.

    Lone surrogates become U+FFFD, runs of horizontal spaces become one space (a single tab is
    kept), spaces at line edges are dropped, and three or more newlines become two.
    """
    text = _SURROGATE_RE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").translate(_LINE_BREAKS)
    text = _DROP_RE.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _NBSP_RE.sub(" ", text)
    text = _SPACE_RUN_RE.sub(" ", text)
    text = _LINE_EDGE_RE.sub("\n", text)
    return _MANY_NEWLINES_RE.sub("\n\n", text)


def normalize_block(text: str) -> str:
    """``normalize_text`` plus strip: the form parsers store for one paragraph, cell or title."""
    return normalize_text(text).strip()


def collapse_whitespace(text: str) -> str:
    """All whitespace, newlines included, to single spaces (for inline HTML/XML text)."""
    return " ".join(text.split())
