"""Applying an edit to a module's blocks and index without redoing the whole file.

An editor changes one place at a time. Splitting, outlining and indexing a 5,000-line file
again costs milliseconds per keystroke, and new objects for every function would make
every cached root result look stale. So after an edit:
- `reparse_blocks` finds the changed region (common prefix and suffix of the texts),
  splits again only the blocks around it and keeps every other Block object (with its
  parse state and outline), moved to its new lines;
- `update_index` gives the edited functions their new blocks when the edit changed
  function bodies only, keeping every FunctionInfo and ClassInfo.
Each gives up (None / False) when the edit reaches further than that, and the caller
splits or indexes the whole text, which is always correct.
"""
from __future__ import annotations

from bisect import bisect_right

from .index import _ROOT_HINT, ClassInfo, FunctionInfo, ModuleIndex, _ignore_comments, header_decorators, member_block
from .outline import cached_outline, string_spans
from .source import _SURROGATE, MAX_FILE_BYTES, Block, _split, bracket_profile, line_count, make_blocks


def reparse_blocks(old_text: str, blocks: list[Block], text: str):
    """(blocks of `text`, the old blocks the edit replaced, the new blocks replacing them),
    or None when `text` must be split whole."""
    if not blocks or len(text) > MAX_FILE_BYTES or text.startswith("\ufeff"):
        return None
    prefix = _common_prefix(old_text, text)
    suffix = _common_suffix(old_text, text, min(len(old_text), len(text)) - prefix)
    starts = [block.start for block in blocks]
    holding = bisect_right(starts, prefix) - 1  # the block the edit begins in
    if holding < 0 or (holding == 0 and blocks[0].start > 0 and prefix == blocks[0].start):
        return None  # at the file's first line: where the first block starts may change
    # One block more on each side: an edit at a block's edge can join it to its neighbour
    # (a continuation line, a decorator, a deleted line break).
    first = max(holding - 1, 0)
    last = min(bisect_right(starts, max(prefix, len(old_text) - suffix - 1)), len(blocks) - 1)
    start = blocks[first].start
    old_end = blocks[last].start + len(blocks[last].text)
    window = text[start:old_end + len(text) - len(old_text)]
    goes_on = last < len(blocks) - 1
    if not window.isascii() and _SURROGATE.search(window):
        return None  # parse_blocks replaces them
    spans = string_spans(window)
    if goes_on and spans and spans[-1][1] == len(window):
        return None  # a triple-quoted string left open: the rest of the file reads differently
    raw = _split(window)
    if goes_on and raw and window.startswith("@", raw[-1][1]) and cached_outline(window[raw[-1][1]:]).kind == "other":
        return None  # decorators with nothing after them in the window: they join the next block
    made = make_blocks(window, raw, lazy=True, may_close_after=(lambda: _may_close(blocks[last + 1:])) if goes_on
                       else None)
    if made is None:
        return None  # a bracket left open that the rest of the file might close: joining reaches past
    for block in made:
        block.first_line += blocks[first].first_line - 1
        block.start += start
    old = blocks[first:last + 1]
    head = 0
    while head < min(len(old), len(made)) and old[head].text == made[head].text:
        head += 1
    tail = 0
    while tail < min(len(old), len(made)) - head and old[-1 - tail].text == made[-1 - tail].text:
        tail += 1
    kept = [*range(head), *range(len(made) - tail, len(made))]
    for new_index in kept:  # unchanged blocks in the window keep their objects
        old_index = new_index if new_index < head else new_index - len(made) + len(old)
        old[old_index].first_line, old[old_index].start = made[new_index].first_line, made[new_index].start
        made[new_index] = old[old_index]
    lines = line_count(window) - line_count(old_text[start:old_end])
    chars = len(text) - len(old_text)
    for block in blocks[last + 1:]:
        block.first_line += lines
        block.start += chars
    return [*blocks[:first], *made, *blocks[last + 1:]], old[head:len(old) - tail], made[head:len(made) - tail]


def _may_close(blocks: list[Block]) -> bool:
    """Whether a bracket still open where `blocks` begin might be closed in them: not when no
    running count of their brackets falls below zero (each block's count is cached by text,
    so after the first keystroke this costs a loop over the blocks)."""
    running = 0
    for block in blocks:
        profile = bracket_profile(block.text)
        if profile is None or running + profile[0] < 0:
            return True
        running += profile[1]
    return False


def update_index(index: ModuleIndex, text: str, blocks: list[Block], removed: list[Block], added: list[Block]) -> bool:
    """Applies an edit inside function bodies to `index` in place: each edited function gets
    its new block; every other FunctionInfo and ClassInfo stays, at its new lines. False,
    with `index` untouched, when the edit changed more than bodies: the interface (see
    interface_text), roots, `global` statements or `torch.compiler.disable` calls."""
    if len(removed) != len(added):
        return False
    targets = []
    for old, new in zip(removed, added):
        if not (old.lazy and new.lazy) or any(_ROOT_HINT.search(b.text) or "global " in b.text for b in (old, new)) \
                or old.outline.name != new.outline.name or interface_text(old) != interface_text(new):
            return False
        owner = (index.functions if new.outline.kind == "def" else index.classes).get(new.outline.name)
        if owner is None or owner.block is not old:  # e.g. a definition shadowed by a later one
            return False
        if isinstance(owner, ClassInfo) and not _same_members(old, new):
            return False
        targets.append((owner, new))
    dropped: set[Block] = set()
    for owner, new in targets:
        dropped.add(owner.block)
        if isinstance(owner, FunctionInfo):
            _rebind(owner, new)
            _parse_like_indexing(index, owner, new.outline)
        else:
            dropped.update(_update_class(index, owner, new))
    index.eager = [block for block in index.eager if block not in dropped]
    if index.ignores or any("fuselens" in block.text for block in added):
        index.ignores = _ignore_comments(text)
    index.text, index.blocks = text, blocks
    index._compiled_roots = None  # an edited forward may (no longer) parse
    for cls in index.classes.values():  # member blocks follow their class to its new lines
        if cls.member_blocks:
            members = [member for member in cls.block.outline.members if member.kind == "def"]
            for member, block in zip(members, cls.member_blocks):
                block.first_line = cls.block.first_line + member.first_line - 2
    return True


def _rebind(function: FunctionInfo, block: Block) -> None:
    function.block, function._node, function._segment = block, None, None


def _parse_like_indexing(index: ModuleIndex, function: FunctionInfo, outline) -> None:
    """Indexing the whole file parses a decorated def whose header does not parse alone (its
    syntax errors are then reported); do the same. Its decorators, in the unchanged header,
    are already applied."""
    if outline.decorated and header_decorators(outline.header) is None:
        function.node
        index.eager.append(function.block)


def _same_members(old: Block, new: Block) -> bool:
    before, after = old.outline.members, new.outline.members
    return len(before) == len(after) and all((a.kind, a.name, a.header, a.decorated) == (b.kind, b.name, b.header,
                                                                                        b.decorated)
                                             for a, b in zip(before, after))


def _update_class(index: ModuleIndex, cls: ClassInfo, block: Block) -> list[Block]:
    """Moves `cls` to its new block; methods whose text changed get new member blocks.
    Returns the member blocks replaced."""
    old_members = [member for member in cls.block.outline.members if member.kind == "def"]
    new_members = [member for member in block.outline.members if member.kind == "def"]
    cls.block = block
    replaced = []
    for position, (old_member, member) in enumerate(zip(old_members, new_members)):
        if old_member.text == member.text:
            continue
        old_block, new_block = cls.member_blocks[position], member_block(block, member)
        replaced.append(old_block)
        cls.member_blocks[position] = new_block
        method = cls.methods.get(member.name)
        if method is not None and method.block is old_block:
            _rebind(method, new_block)
            _parse_like_indexing(index, method, member)
    return replaced


def interface_text(block: Block) -> str:
    """What other functions can observe of a block: everything except function bodies (an
    `__init__` body defines attribute types, but the walks that read them depend on it as
    on a callee: memo.py, attributes.py). Text only: no parsing."""
    outline = block.outline
    if outline.kind == "def":
        return outline.header
    if outline.kind == "class":
        return outline.header + "".join(member.header if member.kind == "def" else member.text
                                        for member in outline.members)
    return block.text


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # bisection over slice comparisons: C speed, O(len) in all
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low
