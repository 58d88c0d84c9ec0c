"""Reading user files robustly and parsing them block by block.

A file is split into top-level blocks (a def/class with its decorators, an import, a
statement). Each block is parsed on its own and cached by its text, so
- a syntax error mid-typing costs only the block it is in (other functions keep their
  findings), and
- after an edit only the edited block is parsed again (the incremental budget is 5 ms,
  while `ast.parse` of a dense 5,000-line file alone takes ~30 ms here).
Block line numbers are block-relative; `Block.first_line` maps them back.
"""
from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
from dataclasses import dataclass, field

from .findings import SourceProblem, Span

MAX_FILE_BYTES = 32 * 1024 * 1024

# A top-level block starts at a column-0 line that begins a statement. Lines that only
# continue the previous statement (else/elif/except/finally, closing brackets) do not.
_BLOCK_START = re.compile(r"^(?![ \t#\r\n)\]}]|(?:else|elif|except|finally)\b)", re.M)


class SourceError(Exception):
    """The file cannot be analysed at all (binary, undecodable, too large)."""


def decode_source(data: bytes, path: str = "<unknown>") -> str:
    """Bytes of a .py file → text, honouring BOMs and PEP 263 coding cookies."""
    if len(data) > MAX_FILE_BYTES:
        raise SourceError(f"{path}: file is {len(data) // (1024 * 1024)} MiB; FuseLens skips files over "
                          f"{MAX_FILE_BYTES // (1024 * 1024)} MiB")
    if b"\0" in data[:8192]:
        raise SourceError(f"{path}: looks like a binary file (NUL bytes); skipped")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"{path}: {error}") from error
    try:
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as error:
        raise SourceError(f"{path}: not valid {encoding} text ({error}); save the file as UTF-8 "
                          f"or declare its encoding (PEP 263)") from error
    return text[1:] if text.startswith("\ufeff") else text


@dataclass
class Block:
    """A run of top-level source lines, parsed on its own."""

    text: str
    first_line: int  # 1-based line of the block's first line in the file
    statements: list[ast.stmt] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (block-relative line, message)

    def file_span(self, node: ast.AST) -> Span:
        offset = self.first_line - 1
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        return Span(node.lineno + offset, node.col_offset, end_line + offset,
                    node.col_offset if end_col is None else end_col)


_parse_cache: dict[str, tuple[list[ast.stmt], list[tuple[int, str]]]] = {}
_PARSE_CACHE_LIMIT = 20000


def split_blocks(text: str) -> list[tuple[int, str]]:
    """(first_line, text) of each top-level block. Decorators stay with what they decorate."""
    starts = [m.start() for m in _BLOCK_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    # Decorator lines stay with the def/class they decorate.
    merged: list[int] = []
    after_decorator = False
    for position in starts:
        if not after_decorator:
            merged.append(position)
        after_decorator = text.startswith("@", position)
    blocks = []
    line = 1
    previous = 0
    for index, start in enumerate(merged):
        end = merged[index + 1] if index + 1 < len(merged) else len(text)
        line += text.count("\n", previous, start)
        previous = start
        if text[start:end].strip():
            blocks.append((line, text[start:end]))
    return blocks


def parse_blocks(text: str) -> list[Block]:
    """Parses every block; a block that fails is retried merged with the next ones
    (a multi-line string can contain column-0 lines), then recovered by blanking."""
    raw = split_blocks(text)
    blocks: list[Block] = []
    index = 0
    while index < len(raw):
        first_line, chunk = raw[index]
        statements, problems = _parse_cached(chunk)
        consumed = 1
        if problems:
            # Try joining with following blocks: the error may be a string/bracket that spans them.
            joined = chunk
            for extra in range(1, min(8, len(raw) - index)):
                joined += raw[index + extra][1]
                statements2, problems2 = _parse_cached(joined, recover=False)
                if not problems2:
                    chunk, statements, problems, consumed = joined, statements2, [], extra + 1
                    break
        blocks.append(Block(chunk, first_line, statements, problems))
        index += consumed
    return blocks


def _parse_cached(chunk: str, recover: bool = True):
    key = chunk if recover else "\0" + chunk
    cached = _parse_cache.get(key)
    if cached is None:
        cached = _parse_with_recovery(chunk) if recover else _parse_strict(chunk)
        if len(_parse_cache) > _PARSE_CACHE_LIMIT:
            _parse_cache.clear()
        _parse_cache[key] = cached
    return cached


def _parse_strict(chunk: str):
    try:
        return ast.parse(chunk).body, []
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return [], [(_error_line(error), _describe(error))]


def _parse_with_recovery(chunk: str):
    """Parse; on a syntax error blank out the innermost def/class (or statement) holding it
    and try again, so the rest of a class or module still gets analysed."""
    lines = chunk.splitlines(keepends=True)
    problems: list[tuple[int, str]] = []
    for _attempt in range(25):
        try:
            return ast.parse("".join(lines)).body, problems
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            line = min(max(_error_line(error), 1), max(len(lines), 1))
            problems.append((line, _describe(error)))
            if not lines or not _blank_region(lines, line - 1):
                return [], problems
    return [], problems


def _error_line(error: BaseException) -> int:
    return getattr(error, "lineno", None) or 1


def _describe(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        return f"syntax error: {error.msg}"
    if isinstance(error, (RecursionError, MemoryError)):
        return "expression too deeply nested to parse"
    return f"cannot parse: {error}"


_HEADER = re.compile(r"^([ \t]*)(?:async[ \t]+def|def|class)\b")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _blank_region(lines: list[str], index: int) -> bool:
    """Replaces the innermost def/class containing line `index` by `pass` (same indentation).
    Returns False when there is nothing left to blank."""
    start = None
    limit = _indent(lines[index]) + 1 if lines[index].strip() else 10**9
    for i in range(index, -1, -1):
        match = _HEADER.match(lines[i])
        if match and (i == index or len(match.group(1).expandtabs()) < limit):
            start = i
            break
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            limit = min(limit, _indent(lines[i]) + (0 if i != index else 1))
    if start is None:
        start = index
        while start > 0 and _indent(lines[start]) > 0:
            start -= 1
    header_indent = _indent(lines[start])
    while start > 0 and lines[start - 1].lstrip().startswith("@") and _indent(lines[start - 1]) == header_indent:
        start -= 1
    end = max(index, start) + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > header_indent):
        end += 1
    replacement = " " * header_indent + "pass\n"
    if all(line == replacement or not line.strip() for line in lines[start:end]):
        return False
    lines[start:end] = [replacement] + ["\n"] * (end - start - 1)
    return True


def block_problems(path: str, blocks: list[Block]) -> list[SourceProblem]:
    result = []
    for block in blocks:
        for line, message in block.problems:
            file_line = line + block.first_line - 1
            result.append(SourceProblem(path, f"{message} (line {file_line}); the rest of the file is "
                                              f"still analysed", Span(file_line, 0, file_line, 0)))
    return result
