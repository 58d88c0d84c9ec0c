"""Fuzzing the analyzer with hypothesis (derandomized: the same examples on every run).

1. Random character and line edits of real files (examples, the corpus, torch sources)
   never make `analyze_source` raise, and every position it reports lies inside the text.
2. A sequence of edits pushed through one Workspace (the language server's incremental
   path: parse cache, index cache, memoised function walks) gives after every edit exactly
   what a fresh analysis of the same text gives. This guards the memoisation.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuselens.analysis import Report, Workspace, analyze_source

REPO = Path(__file__).resolve().parents[2]
TORCH_FILES = ["nn/modules/activation.py", "nn/modules/normalization.py", "nn/modules/transformer.py",
               "optim/adamw.py", "nn/utils/clip_grad.py", "_dynamo/comptime.py"]


def _sources() -> dict[str, str]:
    paths = sorted((REPO / "examples").glob("*.py")) + sorted((REPO / "tests" / "corpus").glob("*.py"))
    spec = importlib.util.find_spec("torch")
    if spec is not None:
        root = Path(next(iter(spec.submodule_search_locations)))
        paths += [root / name for name in TORCH_FILES if (root / name).is_file()]
    return {path.name: path.read_text(encoding="utf-8") for path in paths}


SOURCES = _sources()
NAMES = sorted(SOURCES)
# Fragments that stress the block splitter, the recovery and the checker.
SNIPPETS = ["(", ")", "[", "]", "{", "}", ":", ",", '"""', "'''", '"', "'", "\\\n", "#", "\n", "\r\n", "\r",
            "    ", "\t", "\x0c", "\0", "\ufeff", "é", "\u2028", "def ", "class ", "async def f(", "lambda: ",
            "@torch.compile\n", "@torch.compiler.disable\n", "return ", "yield ", "await ", "if x.sum() > 0:",
            "else:", "elif ", "try:\n", "except Exception:\n", "for i in range(3):\n", "while x.any():\n",
            "print(x)", ".item()", ".tolist()", "torch.compile(", "global state\n", "nonlocal x\n",
            "match x:\n    case 1:\n", "f'{x!r}'", "*args, **kwargs", "x[x > 0]", "self.", "super().", "...",
            "import torch\n", "from . import (", "0x", "1e", "𝔘"]

def fuzz_settings(max_examples: int):
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                    print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def edit(draw):
    """(kind, where, extent, snippet); `where` is a fraction of the text, applied later."""
    kind = draw(st.sampled_from(["delete", "insert", "insert", "swap_lines", "delete_line", "dup_line",
                                 "indent_line", "dedent_line", "replace_line"]))
    return (kind, draw(st.floats(0, 1)), draw(st.integers(0, 80)),
            draw(st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=12))))


def apply_edit(text: str, change) -> str:
    kind, where, extent, snippet = change
    position = int(where * len(text))
    if kind == "delete":
        return text[:position] + text[position + extent:]
    if kind == "insert":
        return text[:position] + snippet + text[position:]
    lines = text.splitlines(keepends=True) or [""]
    index = min(int(where * len(lines)), len(lines) - 1)
    other = (index + 1 + extent) % len(lines)
    if kind == "swap_lines":
        lines[index], lines[other] = lines[other], lines[index]
    elif kind == "delete_line":
        del lines[index]
    elif kind == "dup_line":
        lines.insert(index, lines[index])
    elif kind == "indent_line":
        lines[index] = "    " + lines[index]
    elif kind == "dedent_line":
        lines[index] = lines[index][min(4, len(lines[index]) - len(lines[index].lstrip(" "))):]
    elif kind == "replace_line":
        lines[index] = lines[other]
    return "".join(lines)


def check_report(report: Report, text: str) -> None:
    assert isinstance(report, Report)
    line_count = text.count("\n") + text.count("\r") - text.count("\r\n") + 1
    for finding in report.findings:
        span = finding.span
        assert 1 <= span.line <= span.end_line <= line_count, (finding, line_count)
        assert span.column >= 0 and span.end_column >= 0
        assert finding.message and finding.function
    for problem in report.problems:
        assert problem.message
        if problem.span is not None:
            assert 1 <= problem.span.line <= line_count


@fuzz_settings(400)
@given(name=st.sampled_from(NAMES), changes=st.lists(edit(), min_size=1, max_size=6))
def test_random_edits_never_raise(name, changes):
    text = SOURCES[name]
    for change in changes:
        text = apply_edit(text, change)
    check_report(analyze_source(text, f"<fuzz>/{name}"), text)


def _key(report: Report):
    """Findings and problems: with lazy parsing, problems depend on what the analysis reads,
    which must depend on the text alone (not on what earlier analyses read)."""
    return (sorted((f.code, f.span.line, f.span.column, f.span.end_line, f.span.end_column, f.message, f.function)
                   for f in report.findings), [(p.span, p.message) for p in report.problems])


# One-line edits a person makes inside functions, valid and not.
LINE_EDITS = ["        print(x)\n", "        x = x.item()\n", "        if x.sum() > 0:\n            x = -x\n",
              "        return x\n", "        y = torch.nonzero(x)\n", "        x = (x\n", "        pass\n",
              "        logger.info('step %d', 3)\n", "        time.sleep(1)\n", '        """\n',
              "    def extra(self, x):\n        print(x)\n        return x\n", "\n",
              "        self.count += 1\n", "        x = helper(x)\n", "        for _ in range(2):\n            print(x)\n"]


@st.composite
def line_edit(draw):
    return (draw(st.sampled_from(["replace", "insert", "delete", "char"])), draw(st.floats(0, 1)),
            draw(st.sampled_from(LINE_EDITS)), draw(st.sampled_from(SNIPPETS[:20] + ["x", "1", " "])))


def apply_line_edit(text: str, change) -> str:
    kind, where, line, char = change
    lines = text.splitlines(keepends=True) or [""]
    index = min(int(where * len(lines)), len(lines) - 1)
    if kind == "replace":
        lines[index] = line
    elif kind == "insert":
        lines.insert(index, line)
    elif kind == "delete":
        del lines[index]
    else:  # one keystroke inside the line
        column = len(lines[index]) // 2
        lines[index] = lines[index][:column] + char + lines[index][column:]
    return "".join(lines)


MODEL_NAMES = [name for name in NAMES if name in ("tiny_llama.py", "attention.py", "norms.py", "rope.py",
                                                  "activation.py", "transformer.py")] or NAMES


@fuzz_settings(120)
@given(name=st.sampled_from(MODEL_NAMES), changes=st.lists(line_edit(), min_size=1, max_size=10))
def test_incremental_equals_fresh(name, changes):
    path = f"<fuzz>/{name}"
    workspace = Workspace()
    text = SOURCES[name]
    assert _key(workspace.analyze_file(path, text)) == _key(Workspace().analyze_file(path, text))
    for change in changes:
        text = apply_line_edit(text, change)
        incremental = workspace.analyze_file(path, text)
        assert _key(incremental) == _key(Workspace().analyze_file(path, text)), change


MAIN = '''import torch
import torch.nn as nn
from helpers import scale, Gate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        x = scale(self.proj(x), 2)
        return self.gate(x)


@torch.compile
def run(x):
    y = scale(x, 3)
    return y * 2
'''
HELPERS = '''import torch
import torch.nn as nn


def scale(x, factor):
    y = x * factor
    return y


class Gate(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * x
'''


@fuzz_settings(100)
@given(changes=st.lists(st.tuples(st.booleans(), line_edit()), min_size=1, max_size=8))
def test_incremental_across_files(tmp_path_factory, changes):
    """Edits to either module, pushed through one Workspace, give what a fresh Workspace
    gives for both files (analyze() files each finding under the file it occurs in)."""
    folder = tmp_path_factory.mktemp("ws")
    (folder / "main.py").write_text(MAIN)
    (folder / "helpers.py").write_text(HELPERS)
    paths = [str(folder / "main.py"), str(folder / "helpers.py")]
    texts = dict(zip(paths, [MAIN, HELPERS]))
    workspace = Workspace([folder])
    workspace.analyze(paths)
    for in_helpers, change in changes:
        target = paths[1] if in_helpers else paths[0]
        texts[target] = apply_line_edit(texts[target], change)
        workspace.set_text(target, texts[target])
        fresh = Workspace([folder])
        for path, text in texts.items():
            fresh.set_text(path, text)
        incremental = [_key(report) for report in workspace.analyze(paths)]
        assert incremental == [_key(report) for report in fresh.analyze(paths)], change
