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
import functools
import gc
import io
import re
import tokenize
from itertools import accumulate

from .findings import SourceProblem, Span
from .outline import cached_outline, outside_strings, string_spans

# Bigger files (or editor texts) are refused with a message rather than analysed: ast.parse
# alone manages about 1 MB/s on a 2-core machine, so a 10 MB file would hold an editor for
# many seconds. The largest .py in the torch package is 1.4 MB.
MAX_FILE_BYTES = 2 * 1024 * 1024

# A top-level block starts at a column-0 line that begins a statement. Lines that only
# continue the previous statement (else/elif/except/finally, closing brackets) do not, nor
# do indented lines that begin with a form feed (Python restarts the indent count after it).
_BLOCK_START = re.compile(r"^(?![ \t\f#\r\n)\]}]|(?:else|elif|except|finally)\b)", re.M)


class SourceError(Exception):
    """The file cannot be analysed at all (binary, undecodable, too large)."""


def _too_big(size: int) -> str:
    return (f"file is {size / (1024 * 1024):.1f} MiB; FuseLens skips files over "
            f"{MAX_FILE_BYTES // (1024 * 1024)} MiB")


def decode_source(data: bytes, path: str = "<unknown>") -> str:
    """Bytes of a .py file → text, honouring BOMs and PEP 263 coding cookies."""
    if len(data) > MAX_FILE_BYTES:
        raise SourceError(f"{path}: {_too_big(len(data))}")
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


class Block:
    """A run of source lines parsed on its own, on first use (see outline.py)."""

    __slots__ = ("text", "first_line", "start", "lazy", "_statements", "_problems", "_outline")

    def __init__(self, text: str, first_line: int, statements=None, problems=None, start: int = 0,
                 lazy: bool = False):
        self.text = text
        self.first_line = first_line  # 1-based line of the block's first line in the file
        self.start = start  # offset of its first character in the file's text
        self.lazy = lazy  # a def/class left for its first use (parse_blocks(lazy=True))
        self._statements = statements
        self._problems = problems
        self._outline = None

    @property
    def statements(self) -> list[ast.stmt]:
        if self._statements is None:
            self._statements, self._problems = _parse_cached(self.text)
        return self._statements

    @property
    def problems(self) -> list[tuple[int, str]]:
        """(block-relative line, message) of syntax errors; parses the block if needed."""
        self.statements
        return self._problems

    @property
    def parsed(self) -> bool:
        return self._statements is not None

    @property
    def outline(self):
        if self._outline is None:
            self._outline = cached_outline(self.text)
        return self._outline

    def function_node(self):
        """The function this block defines (a member block wraps it in `class _:`)."""
        for statement in self.statements:
            if isinstance(statement, ast.ClassDef) and statement.name == "_" and statement.body:
                statement = statement.body[0]
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return statement
        return None


_parse_cache: dict[str, tuple[list[ast.stmt], list[tuple[int, str]]]] = {}
_PARSE_CACHE_LIMIT = 20000


def split_blocks(text: str) -> list[tuple[int, str]]:
    """(first_line, text) of each top-level block. Decorators stay with what they decorate."""
    return [(line, text[start:end]) for line, start, end in _split(text)]


def _split(text: str) -> list[tuple[int, int, int]]:
    """(first_line, start offset, end offset) of each non-blank top-level block."""
    # Column-0 lines inside a docstring start nothing.
    starts = outside_strings([m.start() for m in _BLOCK_START.finditer(text)], string_spans(text))
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
    lone_cr = "\r" in text  # a lone CR ends a line for Python too (blocks only start after a LF)
    for index, start in enumerate(merged):
        end = merged[index + 1] if index + 1 < len(merged) else len(text)
        line += text.count("\n", previous, start)
        if lone_cr:
            line += text.count("\r", previous, start) - text.count("\r\n", previous, start)
        previous = start
        if start < end and not text[start:end].isspace():
            blocks.append((line, start, end))
    return blocks


_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_blocks(text: str, lazy: bool = False) -> list[Block]:
    """Splits `text` into blocks and parses them; with `lazy`, def/class blocks are parsed
    only when first used (see outline.py). A block that fails because a string or bracket
    opened in it runs on past a column-0 line (a docstring with unindented lines, a long
    literal) is joined with the blocks up to where that closes; otherwise it is recovered
    by blanking."""
    if len(text) > MAX_FILE_BYTES:
        raise SourceError(_too_big(len(text)))
    if text.startswith("\ufeff"):  # an editor may keep the BOM; Python skips it
        text = text[1:]
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (e.g. from a JSON client) make ast.parse fail without a position;
            # U+FFFD keeps the columns and turns them into string content or a located error.
            text = _SURROGATE.sub("\ufffd", text)
    return make_blocks(text, _split(text), lazy)


def make_blocks(text: str, raw: list[tuple[int, int, int]], lazy: bool, may_close_after=None) -> list[Block] | None:
    """Blocks from the (first_line, start, end) extents of `raw`. `may_close_after` is for a
    `text` that is a window of a file going on: called when a bracket is still open where the
    window ends, it says whether the rest of the file might close it (then None is returned:
    joining would read past the window)."""
    blocks: list[Block] = []
    index = 0
    while index < len(raw):
        first_line, start, end = raw[index]
        chunk = text[start:end]
        deferrable = lazy and cached_outline(chunk).kind != "other"
        if deferrable and _closes_within(chunk):
            blocks.append(Block(chunk, first_line, start=start, lazy=True))
            index += 1
            continue
        statements, problems = _parse_cached(chunk)
        consumed = 1
        if problems:
            last = _join_extent(text, raw, index)
            if last == _RUNS_ON:
                if may_close_after is not None and may_close_after():
                    return None
                last = None
            if last is not None and last > index:
                # Sliced from the text, not concatenated blocks: blank runs between them count.
                joined = text[start:raw[last][2]]
                statements2, problems2 = _parse_cached(joined, recover=False)
                if not problems2:
                    chunk, statements, problems, consumed = joined, statements2, [], last - index + 1
            if problems and deferrable and _only_defines(statements, cached_outline(chunk).name):
                # Joining did not help (typically a bracket left open while typing) and the block
                # holds no other statement: a def or class stays lazy, as if it closed. Its
                # methods keep their own blocks, the broken one stays known (it does not parse),
                # and an edit inside it is a body edit (edits.py).
                blocks.append(Block(chunk, first_line, start=start, lazy=True))
                index += 1
                continue
        blocks.append(Block(chunk, first_line, statements, problems, start=start))
        index += consumed
    return blocks


def _only_defines(statements: list[ast.stmt], name: str) -> bool:
    """What recovery left of a block is its own def/class (or the `pass` that replaced it)."""
    return all(isinstance(statement, ast.Pass) or (isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                        ast.ClassDef)) and statement.name == name)
               for statement in statements)


_profile_cache: dict[str, tuple[int, int] | None] = {}


def bracket_profile(text: str) -> tuple[int, int] | None:
    """(lowest running count, final count) of opening minus closing brackets outside strings
    and comments, reading `text` from its start; None when a string in it is left open.
    Cached by text: edits.py adds these up over the blocks after an edit."""
    result = _profile_cache.get(text, False)
    if result is False:
        brackets = _NOT_BRACKETS.sub("", text)
        if '"' in brackets or "'" in brackets:
            result = None
        else:
            counts = list(accumulate(map(_DEPTH_STEP.__getitem__, brackets)))
            result = (min(counts, default=0), counts[-1] if counts else 0)
        if len(_profile_cache) > _PARSE_CACHE_LIMIT:
            _profile_cache.clear()
        _profile_cache[text] = result
    return result


# What can carry a statement past a line end: strings and brackets (comments are skipped
# so that quotes in them do not count).
_SCAN = re.compile(r"""#[^\r\n]*|(?P<quote>\"\"\"|'''|"|')|(?P<open>[(\[{])|(?P<close>[)\]}])""")
# The rest of a string after its opening quote (backslash escapes apply to raw strings too).
_STRING_REST = {
    '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""', re.S),
    "'''": re.compile(r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''", re.S),
    '"': re.compile(r'[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*"', re.S),
    "'": re.compile(r"[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*'", re.S),
}


# What hides nothing (runs of other characters), comments and complete strings, which hide
# brackets and quotes: removed, they leave the brackets. A one-quote string never starts where
# three quotes do (as in _SCAN), so an unterminated triple-quoted string, like an unterminated
# one-line string, leaves its quote too.
_NOT_BRACKETS = re.compile("[^()\\[\\]{}\"'#]+|#[^\\r\\n]*|"
                           + "|".join(quote + _STRING_REST[quote].pattern for quote in ('"""', "'''")) + "|"
                           + "|".join(quote + f"(?!{quote * 2})" + _STRING_REST[quote].pattern for quote in ('"', "'")),
                           re.S)
_DEPTH_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_closes_cache: dict[str, bool] = {}


def _closes_within(chunk: str) -> bool:
    """No string or bracket opened in `chunk` is still open at its end (cached by text):
    then it needs no joining and can wait to be parsed. The same answer as
    `_join_extent(chunk, [(1, 0, len(chunk))], 0) == 0`, at C speed when every string
    closes: that loop costs a Python iteration per bracket, and every def and class of a
    file is asked."""
    result = _closes_cache.get(chunk)
    if result is None:
        brackets = _NOT_BRACKETS.sub("", chunk)
        if '"' in brackets or "'" in brackets:  # a string left open: let the scan decide
            result = _join_extent(chunk, [(1, 0, len(chunk))], 0) == 0
        else:
            # _join_extent's depth never goes below 0, so it ends at 0 exactly when, read from
            # the end, closing brackets never fall behind opening ones.
            result = max(accumulate(map(_DEPTH_STEP.__getitem__, reversed(brackets))), default=0) <= 0
        result = result and not chunk.rstrip().endswith("\\")  # a trailing backslash joins the next block
        if len(_closes_cache) > _PARSE_CACHE_LIMIT:
            _closes_cache.clear()
        _closes_cache[chunk] = result
    return result


_RUNS_ON = -1  # a bracket is still open where the text ends


def _join_extent(text: str, raw: list[tuple[int, int, int]], index: int) -> int | None:
    """The last block to join with raw[index] so that no string or bracket opened from there
    is still open where the joined text ends: `index` itself when none is open at its end,
    None when a triple-quoted string never closes (e.g. a docstring being typed: joining
    cannot help then, and the functions after it must keep their own blocks), _RUNS_ON
    when a bracket never closes (the same, unless `text` is only part of the file)."""
    depth = 0
    last = index
    boundary = raw[index][2]
    position = raw[index][1]
    while True:
        match = _SCAN.search(text, position)
        if match is None:
            return last if depth == 0 else _RUNS_ON
        if depth == 0 and match.start() >= boundary:
            return last
        position = match.end()
        kind = match.lastgroup
        if kind == "quote":
            rest = _STRING_REST[match.group()].match(text, position)
            if rest is None:
                if len(match.group()) == 3:
                    return None
                continue  # an unterminated one-line string: the tokenizer stops at its line
            position = rest.end()
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(depth - 1, 0)
        if position > boundary:
            while last + 1 < len(raw) and raw[last][2] < position:
                last += 1
            boundary = raw[last][2]


def _parse_cached(chunk: str, recover: bool = True):
    key = chunk if recover else "\0" + chunk
    cached = _parse_cache.get(key)
    if cached is None:
        cached = _parse_with_recovery(chunk) if recover else _parse_strict(chunk)
        if len(_parse_cache) > _PARSE_CACHE_LIMIT:
            _parse_cache.clear()
        _parse_cache[key] = cached
    return cached


def gc_paused(function):
    """Runs `function` with the cyclic GC paused. A parse or an analysis allocates many
    thousands of objects (AST nodes, types, findings) that hold no reference cycles, and the
    collections their count triggers (up to full ones, over every object alive) find nothing:
    they cost a tenth of an analysis and as much as a parse. The objects are counted all the
    same; the next collection looks at the survivors once."""
    @functools.wraps(function)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return function(*args, **kwargs)
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.enable()
    return paused


_ast_parse = gc_paused(ast.parse)


def _parse_strict(chunk: str):
    try:
        return _ast_parse(chunk).body, []
    except Exception as error:  # noqa: BLE001 - whatever the parser raises is a problem of the input
        return [], [(_error_line(error, _split_lines(chunk)), _describe(error))]


def _parse_with_recovery(chunk: str):
    """Parse; on a syntax error blank out the innermost def/class (or statement) holding it
    and try again, so the rest of a class or module still gets analysed."""
    lines = None  # split only once a parse fails (most succeed)
    problems: list[tuple[int, str]] = []
    for _attempt in range(25):
        try:
            return _ast_parse(chunk if lines is None else "".join(lines)).body, problems
        except Exception as error:  # noqa: BLE001 - whatever the parser raises is a problem of the input
            if lines is None:
                lines = _split_lines(chunk)
            line = min(max(_error_line(error, lines), 1), max(len(lines), 1))
            problem = (line, _describe(error))
            if problem not in problems:
                problems.append(problem)
            if not lines or not _blank_region(lines, line - 1):
                return [], problems
    return [], problems


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def line_count(text: str) -> int:
    """Line breaks in `text` as Python counts them: LF, CRLF, and a CR on its own."""
    count = text.count("\n")
    return count + text.count("\r") - text.count("\r\n") if "\r" in text else count


def _split_lines(text: str) -> list[str]:
    """Lines as Python numbers them: only CR, LF and CRLF end one. (str.splitlines also
    splits at form feeds, U+2028 and other characters Python allows inside a line.)"""
    return _LINE.findall(text)


def _error_line(error: BaseException, lines: list[str]) -> int:
    line = getattr(error, "lineno", None)
    if line:
        return line
    # No position: a NUL, or nesting too deep for the parser (RecursionError). Point at the
    # NUL, else at the longest line (where such an expression nearly always is), so recovery
    # blanks the function holding it rather than the block's first line (a decorator).
    for number, text in enumerate(lines, 1):
        if "\0" in text:
            return number
    return max(range(len(lines)), key=lambda i: len(lines[i]), default=0) + 1


def _describe(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        return f"syntax error: {error.msg or error}"
    if isinstance(error, (RecursionError, MemoryError)):
        return "expression too deeply nested to parse"
    return f"cannot parse: {error}"


_HEADER = re.compile(r"^([ \t]*)(?:async[ \t]+def|def|class)\b")


def _indent(line: str) -> int:
    leading = line[:len(line) - len(line.lstrip(" \t\f"))]
    return len(leading) - leading.rfind("\f") - 1  # a form feed restarts the count


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


def block_problems(path: str, blocks) -> list[SourceProblem]:
    """Syntax errors of `blocks` (parsed now if need be), each once, in file order."""
    found = {}
    for block in blocks:
        for line, message in block.problems:
            file_line = line + block.first_line - 1
            found.setdefault((file_line, _file_lines(message, block.first_line)), None)
    return [SourceProblem(path, f"{message} (line {line}); the rest of the file is still analysed",
                          Span(line, 0, line, 0)) for line, message in sorted(found)]


def _file_lines(message: str, first_line: int) -> str:
    """Python's messages name lines of the parsed block ("expected an indented block after
    'if' statement on line 3", "detected at line 16"); make them lines of the file."""
    return re.sub(r"\bline (\d+)", lambda m: f"line {int(m.group(1)) + first_line - 1}", message)
