"""A text-only outline of a block: what it defines, without parsing function bodies.

`ast.parse` is most of the analyzer's cost (~5–15 µs per line here), and most functions of a
file are never reached from a compile root. The outline finds each def/class, its name,
decorators, header (signature/bases) and, for classes, each member's own text, so a function
is parsed only when the analysis reaches it — and after an edit only that member again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_DEF = re.compile(r"(?:async[ \t]+)?def[ \t]+(\w+)")
_CLASS = re.compile(r"class[ \t]+(\w+)")
_TRIPLE = re.compile(r"(\"\"\"|''')")


@dataclass
class Member:
    """A def (with its decorators) or any other statement of a class body."""

    kind: str  # "def" | "other"
    name: str | None
    first_line: int  # line of the member's first line, relative to the block (1-based)
    text: str
    header: str  # decorators and signature: what callers can observe
    decorated: bool


@dataclass
class Outline:
    kind: str  # "def" | "class" | "other"
    name: str | None = None
    header: str = ""
    decorated: bool = False
    members: list[Member] = field(default_factory=list)


def header_end(text: str, start: int) -> int:
    """Index just past the `:` that ends the def/class header starting at `start`
    (brackets, strings and comments skipped); -1 if there is none."""
    colon = text.find(":", start)
    while colon >= 0:  # the usual header has no string or comment before its colon
        segment = text[start:colon]
        if '"' in segment or "'" in segment or "#" in segment:
            break
        if _net_brackets(segment) == 0:
            return colon + 1
        colon = text.find(":", colon + 1)
    return _scan_header_end(text, start)


def _net_brackets(text: str) -> int:
    return (text.count("(") + text.count("[") + text.count("{")
            - text.count(")") - text.count("]") - text.count("}"))


def _scan_header_end(text: str, start: int) -> int:
    depth = 0
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "#":
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        elif ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            close = text.find(quote, i + len(quote))
            while close > 0 and len(quote) == 1 and text[close - 1] == "\\":
                close = text.find(quote, close + 1)
            if close < 0:
                return -1
            i = close + len(quote)
            continue
        elif ch == ":" and depth == 0:
            return i + 1
        i += 1
    return -1


_cache: dict[str, Outline] = {}


def cached_outline(text: str) -> Outline:
    result = _cache.get(text)
    if result is None:
        if len(_cache) > 20000:
            _cache.clear()
        result = _cache[text] = outline(text)
    return result


def outline(text: str) -> Outline:
    stripped = text.lstrip()
    decorated = stripped.startswith("@")
    position = _skip_decorators(text)
    match = _DEF.match(text, position)
    if match:
        end = header_end(text, match.end())
        return Outline("def", match.group(1), text[:end] if end > 0 else text, decorated)
    match = _CLASS.match(text, position)
    if match:
        end = header_end(text, match.end())
        if end < 0:
            return Outline("other")
        members = _members(text, end)
        if members is None:
            return Outline("other")  # an unusual body (one-liner, odd indentation): parse it whole
        return Outline("class", match.group(1), text[:end], decorated, members)
    return Outline("other")


def _skip_decorators(text: str) -> int:
    position = 0
    while text.startswith("@", position):
        end = header_end_of_line(text, position)
        position = end
    return position


def header_end_of_line(text: str, start: int) -> int:
    """End of a (possibly bracket-continued) decorator line, as an index after its newline."""
    newline = text.find("\n", start)
    if newline >= 0 and _net_brackets(text[start:newline]) <= 0:
        return newline + 1
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "\n" and depth <= 0:
            return i + 1
        i += 1
    return len(text)


_LONE_CR = re.compile(r"\r(?!\n)")
_FIRST_CODE = re.compile(r"^([^\S\r\n]*)[^\s#]", re.M)  # a line's indentation, if it holds code
_member_start_cache: dict[str, re.Pattern] = {}


def _member_start(indent: str) -> re.Pattern:
    """Lines that start a member of a class body indented by `indent`: not more indented,
    not blank, not a comment, a closing bracket or a clause of a compound statement."""
    pattern = _member_start_cache.get(indent)
    if pattern is None:
        pattern = _member_start_cache[indent] = re.compile(
            "^" + re.escape(indent) + r"(?![ \t#)\]}]|(?:else|elif|except|finally)\b|[^\S\n]*$)", re.M)
    return pattern


def _members(text: str, body_start: int) -> list[Member] | None:
    newline = text.find("\n", body_start)
    if newline < 0 or text[body_start:newline].strip() not in ("", ) and not text[body_start:newline].strip().startswith("#"):
        return None
    from .source import line_count

    body = text[newline + 1:]
    base = line_count(text[:newline + 1]) + 1  # 1-based line of the first body line
    # Python also ends a line at a lone CR; scanned with LF there, offsets stay the same.
    scan = _LONE_CR.sub("\n", body) if "\r" in body else body
    first = _FIRST_CODE.search(scan)
    if first is None or not first.group(1):
        return None
    indent = first.group(1)
    starts = []  # (0-based line in the body, offset)
    after_decorator = False
    line = counted = 0
    for start in outside_strings([match.start() for match in _member_start(indent).finditer(scan)],
                                 string_spans(body)):
        line += scan.count("\n", counted, start)
        counted = start
        if not after_decorator:  # a def stays with its decorators
            starts.append((line, start))
        after_decorator = scan.startswith("@", start + len(indent))
    if not starts or starts[0][1] != first.start():
        return None
    members = []
    for index, (line, start) in enumerate(starts):
        chunk = body[start:starts[index + 1][1] if index + 1 < len(starts) else len(body)]
        position = _skip_decorators_indented(chunk, indent)
        match = _DEF.match(chunk, position + len(indent)) if chunk.startswith(indent, position) else None
        first_line = base + line
        if match:
            end_header = header_end(chunk, match.end())
            header = chunk[:end_header] if end_header > 0 else chunk
            members.append(Member("def", match.group(1), first_line, chunk, header, position > 0))
        else:
            members.append(Member("other", None, first_line, chunk, chunk, False))
    return members


def _skip_decorators_indented(chunk: str, indent: str) -> int:
    position = 0
    while chunk.startswith(indent + "@", position):
        position = header_end_of_line(chunk, position)
    return position


def string_spans(text: str) -> list[tuple[int, int]]:
    """(opening quote, closing quote) offsets of the triple-quoted strings, in order; one
    never closed closes at the end of the text."""
    spans: list[tuple[int, int]] = []
    if '"""' not in text and "'''" not in text:
        return spans
    position = 0
    while True:
        match = _TRIPLE.search(text, position)
        if not match:
            return spans
        close = text.find(match.group(1), match.end())
        if close < 0:
            close = len(text)
        spans.append((match.start(), close))
        position = min(close + 3, len(text))


def outside_strings(line_starts, spans: list[tuple[int, int]]) -> list[int]:
    """The line starts (ascending offsets) that are not inside a triple-quoted string: the
    lines after a string's first one, up to its last, are."""
    kept = []
    index = 0
    for start in line_starts:
        while index < len(spans) and spans[index][1] < start:
            index += 1
        if index == len(spans) or not spans[index][0] < start:
            kept.append(start)
    return kept
