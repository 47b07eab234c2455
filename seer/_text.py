"""Text SEER did not write itself, made safe for a terminal: control characters
shown as escapes, and Rich markup escaped where it is printed through Rich.

Paths, model metadata, plug-in names and the messages of a plug-in's
exceptions can hold anything: a ``[/bold]`` in a path would end a Rich print
in a ``MarkupError``, and an ANSI escape sequence in a model file would reach
the user's terminal (moving the cursor, retitling the window, rewriting what
was printed before).
"""

from __future__ import annotations

import re

__all__ = ["for_terminal", "markup_safe"]

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode marks that reorder or hide text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def for_terminal(value, *, newlines: bool = True) -> str:
    """``str(value)`` with every control character written as an escape
    (``\\x1b``), so printing it cannot drive the terminal; with
    ``newlines=False`` line breaks and tabs are escaped too (one-line fields)."""
    text = value if isinstance(value, str) else str(value)
    text = _CONTROL.sub(_escape, text)
    if not newlines:
        text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text


def markup_safe(value, *, newlines: bool = True) -> str:
    """:func:`for_terminal`, then Rich markup escaped: the text prints as itself through Rich."""
    from rich.markup import escape

    return escape(for_terminal(value, newlines=newlines))
