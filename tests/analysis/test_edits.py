"""Applying an edit without redoing the whole file (analysis/edits.py) and the fast paths
of the block splitter: each must give exactly what doing it all again gives.

- reparse_blocks(old text, its blocks, new text) is either None (split the whole text) or
  the very blocks parse_blocks(new text) makes, the untouched ones as the old objects;
- update_index either refuses or leaves an index equal to a fresh build's;
- the C-speed checks in source.py and outline.py agree with the scans they stand for.
"""
from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from fuselens.analysis import Workspace, checker
from fuselens.analysis.edits import reparse_blocks, update_index
from fuselens.analysis.index import build_index
from fuselens.analysis.outline import _scan_header_end, header_end
from fuselens.analysis.source import _closes_within, _join_extent, _split, parse_blocks

from test_fuzz import NAMES, SNIPPETS, SOURCES, apply_edit, apply_line_edit, edit, fuzz_settings, line_edit

MODEL = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    def helper(x):
        return x.sum()


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            y = self.proj(x)
            return y * 2

        def other(self, x):
            return x


    @torch.compile
    def step(x):
        return helper(x)
    ''')


def shape(blocks):
    return [(block.first_line, block.start, block.text, block.lazy) for block in blocks]


def check_reparse(old: str, new: str):
    blocks = parse_blocks(old, lazy=True)
    edit = reparse_blocks(old, blocks, new)
    if edit is not None:
        assert shape(edit[0]) == shape(parse_blocks(new, lazy=True))
        assert all(block in blocks for block in edit[0] if block not in edit[2])  # the rest are the old objects
    return edit


def test_a_body_edit_replaces_one_block_and_keeps_the_others():
    blocks = parse_blocks(MODEL, lazy=True)
    new = MODEL.replace("return y * 2", "return y * 3")
    result, removed, added = reparse_blocks(MODEL, blocks, new)
    assert len(removed) == len(added) == 1 and "class Block" in added[0].text
    assert [block for block in result if block is not added[0]] == [block for block in blocks if block is not removed[0]]


def test_a_line_inserted_moves_the_blocks_below():
    last = parse_blocks(MODEL, lazy=True)[-1].first_line
    new = MODEL.replace("        y = self.proj(x)\n", "        y = self.proj(x)\n        y = y + 1\n")
    result, _, _ = check_reparse(MODEL, new)
    assert result[-1].first_line == last + 1


def test_edits_at_block_edges():
    cases = [
        MODEL.replace("\n\n@torch.compile\ndef step", "\n\n@torch.compile\n\n\ndef step"),  # decorator left alone
        MODEL.replace("def helper(x):", "@torch.compile\ndef helper(x):"),                # decorator added
        MODEL.replace("\n\nclass Block", "\nx = (\n\nclass Block"),                       # bracket opened above
        MODEL.replace("    def other(self, x):", '    """\n    def other(self, x):'),        # string opened
        MODEL.replace("def helper(x):\n", "def helper(x):\n  "),                          # odd indentation
        MODEL.replace("import torch.nn as nn\n", "import torch.nn as nn"),               # a line break deleted
        MODEL + "\n\nclass Late(nn.Module):\n    def forward(self, x):\n        return x\n",
        MODEL.replace("import torch\n", ""),                                                # first block changed
    ]
    for new in cases:
        check_reparse(MODEL, new)


@fuzz_settings(300)
@given(name=st.sampled_from(NAMES), changes=st.lists(st.one_of(edit().map(lambda change: (apply_edit, change)),
                                                              line_edit().map(lambda change: (apply_line_edit, change))),
                                                    min_size=1, max_size=3))
def test_reparse_equals_parse_blocks(name, changes):
    text = SOURCES[name]
    for apply, change in changes:
        new = apply(text, change)
        check_reparse(text, new)
        text = new


def index_shape(index):
    """What a walk can observe of an index (FunctionInfo and Block objects aside)."""
    functions = {name: (info.block.text, info.disabled) for name, info in index.functions.items()}
    classes = {name: (cls.bases, {m: (f.block.text, f.disabled) for m, f in cls.methods.items()},
                      [block.text for block in cls.member_blocks]) for name, cls in index.classes.items()}
    return (functions, classes, index.imports, {k: type(v).__name__ for k, v in index.globals.items()},
            sorted(index.mutated_globals), [(root.mode, root.function.qualname) for root in index.roots],
            index.ignores, sorted(block.text for block in index.eager))


@fuzz_settings(200)
@given(name=st.sampled_from(NAMES), change=line_edit())
def test_update_index_equals_a_fresh_build(name, change):
    old = SOURCES[name]
    new = apply_line_edit(old, change)
    index = build_index("<m>", "m", old, parse_blocks(old, lazy=True))
    edit = reparse_blocks(old, index.blocks, new)
    if edit is not None and update_index(index, new, *edit):
        fresh = build_index("<m>", "m", new, parse_blocks(new, lazy=True))
        assert index_shape(index) == index_shape(fresh)
        lines = {name: info.block.first_line for name, info in index.functions.items()}
        assert lines == {name: info.block.first_line for name, info in fresh.functions.items()}
        for cls in index.classes.values():
            assert [b.first_line for b in cls.member_blocks] == [
                b.first_line for b in fresh.classes[cls.name].member_blocks]


def test_update_index_refuses_an_interface_change():
    index = build_index("<m>", "m", MODEL, parse_blocks(MODEL, lazy=True))
    for new in (MODEL.replace("def helper(x):", "def helper(x, y=1):"),   # a signature
                MODEL.replace("return helper(x)", "return torch.compile(helper)(x)"),  # a root call
                MODEL.replace("class Block(nn.Module):", "class Block(nn.Linear):")):
        edit = reparse_blocks(MODEL, index.blocks, new)
        assert edit is None or not update_index(index, new, *edit)
    assert index.text == MODEL


def walks_after(workspace, text):
    walks = []
    original = checker.FunctionWalker.run

    def run(self):
        walks.append(self.function.qualname)
        return original(self)

    checker.FunctionWalker.run = run
    try:
        workspace.analyze_file("<mem>/model.py", text)
    finally:
        checker.FunctionWalker.run = original
    return walks


def test_an_init_edit_rewalks_only_what_read_its_attributes():
    workspace = Workspace()
    workspace.analyze_file("<mem>/model.py", MODEL)
    epoch = workspace.epoch
    walks = walks_after(workspace, MODEL.replace("nn.Linear(dim, dim)", "nn.Linear(dim, 2 * dim)"))
    assert workspace.epoch == epoch  # a body edit, not an interface change
    assert set(walks) == {"Block.__init__", "Block.forward"}


def test_a_keystroke_leaving_an_open_bracket_keeps_the_other_methods():
    workspace = Workspace()
    workspace.analyze_file("<mem>/model.py", MODEL)
    module = workspace.index("<mem>/model.py")
    other = module.classes["Block"].methods["other"]
    broken = MODEL.replace("y = self.proj(x)", "y = self.proj(x")
    report = workspace.analyze_file("<mem>/model.py", broken)
    assert workspace.index("<mem>/model.py") is module and module.classes["Block"].methods["other"] is other
    assert module.classes["Block"].methods["forward"].node is None  # known, but it does not parse
    assert [p.span.line for p in report.problems] == [15]


def test_closes_within_agrees_with_the_scan():
    for text in SOURCES.values():
        for _, start, end in _split(text):
            chunk = text[start:end]
            for variant in (chunk, *(chunk[:len(chunk) // 2] + snippet + chunk[len(chunk) // 2:]
                                     for snippet in SNIPPETS[:14])):
                expected = _join_extent(variant, [(1, 0, len(variant))], 0) == 0 and \
                    not variant.rstrip().endswith("\\")
                assert _closes_within(variant) == expected, variant[:200]


def test_header_end_agrees_with_the_scan():
    headers = ["def f(x: int, y: 'str' = ':') -> dict[str, int]:", "def f(x=(1, 2)):", "def f(a: int,  # c: d\n b):",
               "class A(B, metaclass=M):", "def f(x=lambda y: y):", "def f(x={'a': 1}):", "def f(", "def f(x) -> 'a:b':"]
    for header in headers + [line for text in SOURCES.values() for line in text.splitlines()
                             if line.lstrip().startswith(("def ", "class "))][:3000]:
        start = header.index(" ")
        assert header_end(header, start) == _scan_header_end(header, start), header
