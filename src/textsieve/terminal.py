"""Text from documents, pages and mails made safe to show on a terminal.

Archive content is hostile: a page title can hold ``ESC ] 0 ; ... BEL`` (it retitles the
window), ``ESC [ 2 J`` (clears the screen), an OSC 52 sequence (writes the clipboard) or bare
carriage returns that overwrite what was printed before. Everything the command shows a person
from that content goes through ``for_terminal``; JSON output does not need it (json escapes
every control character) and keeps the text exact.
"""

from __future__ import annotations

import re

# Whole escape sequences first, so their parameters do not survive as visible junk:
# CSI (ESC [ or 8-bit 0x9B) params, intermediates, final byte; OSC, DCS, SOS, PM, APC strings
# up to BEL or ST (ESC \ or 0x9C), or to the end when unterminated; any other ESC + one char.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]P^_X]|[\x9d\x90\x9e\x9f\x98])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x7e]?"
)
_LAYOUT = "\n\t"
# C0 controls, DEL and C1 controls, minus the layout characters a multi-line text keeps.
_CONTROL = re.compile("[" + "".join(
    re.escape(chr(c)) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in _LAYOUT)
    + "]")
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def for_terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` without escape sequences and control characters; newlines and tabs stay
    (they are layout), unless ``one_line``, where every control becomes a space so that a
    message with a line break cannot forge a second line of output."""
    text = _SEQUENCE.sub("", text)
    if one_line:
        return _CONTROL_ONE_LINE.sub(" ", text)
    return _CONTROL.sub("", text)


__all__ = ["for_terminal"]
