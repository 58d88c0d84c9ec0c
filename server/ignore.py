"""The "ignore on this line" edit: append `# fuselens: ignore[CODE]`, or extend an existing one."""
from __future__ import annotations

import re

from lsprotocol import types

IGNORE_COMMENT = re.compile(r"#\s*fuselens:\s*ignore\[([^\]]*)\]")


def ignore_edit(line_text: str, line: int, code: str, units) -> types.TextEdit | None:
    """`line_text` without its newline; `units(text)` counts client position units.
    None when no comment can go on this line (it ends in a backslash continuation)."""
    match = IGNORE_COMMENT.search(line_text)
    if match:
        codes = [c.strip() for c in match.group(1).split(",") if c.strip()]
        if code in codes:
            return None
        new = f"# fuselens: ignore[{', '.join(codes + [code])}]"
        start, end = units(line_text[:match.start()]), units(line_text[:match.end()])
        return types.TextEdit(range=types.Range(start=types.Position(line=line, character=start),
                                                end=types.Position(line=line, character=end)),
                              new_text=new)
    stripped = line_text.rstrip()
    if stripped.endswith("\\"):
        return None
    end = units(stripped)
    return types.TextEdit(range=types.Range(start=types.Position(line=line, character=end),
                                            end=types.Position(line=line, character=units(line_text))),
                          new_text=f"  # fuselens: ignore[{code}]")
