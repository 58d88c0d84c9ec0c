"""Issue 2's "never crashes, never freezes": odd, broken, huge and hostile inputs.

Each test checks two things: the analyzer returns a Report (no exception, bounded time),
and what is still analysable is still analysed (the other functions keep their findings;
problems point at the right line). Findings are compared as (line, code, function).
"""
from __future__ import annotations

import importlib.util
import textwrap
import time
from pathlib import Path

import pytest

from fuselens.analysis import Report, SourceError, Workspace, analyze_paths, analyze_source, decode_source
from fuselens.analysis.workspace import iter_python_files

MODEL = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def helper(self, x):
            print("helper")
            return x

        def broken(self, x):
            y = torch.relu(x)
            return y.item()

        def forward(self, x):
            x = self.helper(self.proj(x))
            return self.broken(x)


    @torch.compile
    def before(x):
        return x.sum().item()


    @torch.compile
    def typing_now(x):
        z = torch.cat((x, x))
        print(z)
        return z


    @torch.compile
    def after(x):
        print("after")
        return x
    ''')


def findings(report: Report) -> set[tuple[int, str, str]]:
    return {(f.span.line, f.code, f.function) for f in report.findings}


def outside(found, *functions):
    return {f for f in found if f[2] not in functions}


def analyse(text: str, path: str = "<mem>") -> Report:
    report = analyze_source(text, path)
    assert isinstance(report, Report)
    return report


BASELINE = findings(analyze_source(MODEL, "<mem>"))


def test_model_baseline_is_meaningful():
    # The tests below compare against this; it must contain findings in every function.
    assert {f[2] for f in BASELINE} >= {"Net.helper", "Net.broken", "before", "typing_now", "after"}


# --- syntax errors mid-typing ----------------------------------------------------------------

def test_unclosed_paren_keeps_other_functions_and_methods():
    text = (MODEL.replace("y = torch.relu(x)", "y = torch.relu(x")          # in a method of Net
                 .replace("z = torch.cat((x, x))", "z = torch.cat((x, x"))  # in a top-level function
    report = analyse(text)
    assert outside(findings(report), "Net.broken", "typing_now") == outside(BASELINE, "Net.broken", "typing_now")
    lines = sorted(p.span.line for p in report.problems)
    assert lines == [15, 30]
    assert all("never closed" in p.message for p in report.problems)


def test_typing_a_line_character_by_character():
    """Every prefix of a line being typed into Net.helper: nothing else changes, in a fresh
    analysis and through one Workspace (the language server's path)."""
    typed = '        scale = torch.cat([x, x.new_ones((1,))], dim=0)["a"'
    lines = MODEL.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if 'print("helper")' in line) + 1
    workspace = Workspace()
    shifted = {(line + (line > at), code, function) for line, code, function in BASELINE}
    for end in range(0, len(typed) + 1, 2):
        text = "".join(lines[:at] + [typed[:end] + "\n"] + lines[at:])
        fresh = findings(analyse(text))
        incremental = findings(workspace.analyze_file("model.py", text))
        assert outside(fresh, "Net.helper", "Net.forward") == outside(shifted, "Net.helper", "Net.forward"), end
        assert incremental == fresh, typed[:end]


def test_unterminated_triple_quoted_string_being_typed():
    text = MODEL.replace("    z = torch.cat((x, x))\n", '    """Concatenates\n')
    report = analyse(text)
    assert outside(findings(report), "typing_now") == outside(BASELINE, "typing_now")
    (problem,) = report.problems
    assert "unterminated triple-quoted" in problem.message and problem.span.line == 30
    # Python's own "detected at line N" names a line of the file, not of the parsed block.
    assert f"detected at line {text.count(chr(10))}" in problem.message


def test_python2_print_statement():
    report = analyse(MODEL.replace('print("after")', 'print "after"'))
    assert outside(findings(report), "after") == outside(BASELINE, "after")
    assert [p.span.line for p in report.problems] == [37]
    report = analyse(MODEL.replace('    print("after")\n', "    if x:\n    print('after')\n"))
    assert [p.span.line for p in report.problems] == [38]
    assert "after 'if' statement on line 37" in report.problems[0].message


def test_docstrings_with_unindented_lines_are_not_errors():
    """A multi-line string's column-0 lines look like block starts; a valid file must still
    parse without problems (torch/nn/functional.py has ~60 such docstrings)."""
    paragraphs = "".join(f"Paragraph {i}: conv1d(input) -> Tensor, see 1e-3.\n\n" for i in range(40))
    text = (f'"""Module docstring\n\n{paragraphs}"""\nimport textwrap\n\nimport torch\n\n'
            f'conv = _add_docstr(\n    torch.conv1d,\n    r"""\n{paragraphs}""",\n)\n\n\n'
            "def make_repro(distributed):\n"
            '    imports = ""\n'
            "    if distributed:\n"
            '        imports = textwrap.dedent(\n            """\nimport torch.distributed as dist\n'
            'from x import (y,\n"""\n        )\n'
            '    return f"""\n{imports}\ndef f(x):\n    return x\n"""\n\n\n'
            + MODEL)
    report = analyse(text)
    assert report.problems == []
    offset = text.count("\n") - MODEL.count("\n")
    assert findings(report) == {(line + offset, code, fn) for line, code, fn in BASELINE}


# --- encodings and unreadable files ----------------------------------------------------------

def test_non_utf8_bytes_are_a_clear_problem(tmp_path):
    data = b"import torch\n\n@torch.compile\ndef f(x):\n    return x  # caf\xe9\n"
    with pytest.raises(SourceError, match=r"bad\.py: not valid utf-8.*PEP 263"):
        decode_source(data, "bad.py")
    path = tmp_path / "bad.py"
    path.write_bytes(data)
    report = Workspace([tmp_path]).analyze_file(str(path))
    assert report.findings == []
    (problem,) = report.problems
    assert "utf-8" in problem.message


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "iso-8859-15"])
def test_pep263_cookie(encoding):
    text = (f"# -*- coding: {encoding} -*-\nimport torch\n\n@torch.compile\ndef f(x):\n"
            "    s = 'café'; print(s)\n    return x\n")
    decoded = decode_source(text.encode(encoding), "cookie.py")
    assert "café" in decoded
    (finding,) = analyse(decoded).findings
    # Columns count characters: `é` is one column, though two bytes in UTF-8.
    assert (finding.span.line, finding.span.column, finding.code) == (6, 16, "FL110")


def test_bom():
    body = "import torch\n\n@torch.compile\ndef f(x):\n    print(x)\n"
    assert decode_source(b"\xef\xbb\xbf" + body.encode(), "bom.py") == body
    # A BOM that reaches the analyzer as text (an editor kept it) is not a syntax error.
    report = analyse("\ufeff" + body)
    assert report.problems == [] and findings(report) == {(5, "FL110", "f")}
    assert analyse("\ufeff").problems == []
    # A UTF-8 BOM contradicting the cookie is refused, not guessed.
    with pytest.raises(SourceError):
        decode_source(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "both.py")


def test_unknown_encoding_cookie():
    with pytest.raises(SourceError, match="klingon"):
        decode_source(b"# coding: klingon\nx = 1\n", "k.py")


def test_binary_file(tmp_path):
    blob = bytes(range(256)) * 64
    with pytest.raises(SourceError, match="binary"):
        decode_source(blob, "blob.py")
    (tmp_path / "blob.py").write_bytes(blob)
    (tmp_path / "model.py").write_text(MODEL)
    reports = {Path(r.path).name: r for r in analyze_paths([str(tmp_path)])}
    assert "binary" in reports["blob.py"].problems[0].message
    assert findings(reports["model.py"]) == BASELINE


def test_nul_byte_in_text_is_located():
    text = MODEL.replace('print("after")', 'print("after")\0')
    report = analyse(text)
    assert outside(findings(report), "after") == outside(BASELINE, "after")
    assert [p.span.line for p in report.problems] == [37]


def test_lone_surrogate_in_text():
    # A JSON client can send one; it must not make the whole block unparseable.
    report = analyse(MODEL.replace('"helper"', '"\ud800"'))
    assert findings(report) == BASELINE and report.problems == []
    report = analyse(MODEL.replace("y = torch.relu(x)", "\udc80 = torch.relu(x)"))
    assert outside(findings(report), "Net.broken") == outside(BASELINE, "Net.broken")


# --- size ------------------------------------------------------------------------------------

def _big_model(size: int) -> str:
    parts, total = [], 0
    while total < size:
        i = len(parts)
        parts.append(MODEL.replace("Net", f"Net{i}").replace("def before", f"def before{i}")
                     .replace("def typing_now", f"def typing_now{i}").replace("def after", f"def after{i}"))
        total += len(parts[-1])
    return "".join(parts)


def test_10_mb_file_is_refused_quickly(tmp_path, capsys):
    text = _big_model(10_000_000)
    started = time.perf_counter()
    with pytest.raises(SourceError, match="MiB"):
        decode_source(text.encode(), "big.py")
    report = analyse(text, "big.py")  # an editor sends text, not bytes
    assert report.findings == [] and "MiB" in report.problems[0].message
    assert time.perf_counter() - started < 3
    from fuselens.cli import main

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "big.py").write_text(text)
    started = time.perf_counter()
    assert main(["check", str(tmp_path / "big.py")]) == 0
    assert time.perf_counter() - started < 3
    assert "MiB" in capsys.readouterr().err


def test_huge_single_lines():
    table = "TABLE = [" + ", ".join(str(i % 97) for i in range(40_000)) + "]\n"
    blob = "BLOB = '" + "x" * 1_000_000 + "'\n"
    started = time.perf_counter()
    report = analyse(table + blob + MODEL)
    assert time.perf_counter() - started < 5
    assert report.problems == []
    assert findings(report) == {(line + 2, code, fn) for line, code, fn in BASELINE}


# --- nesting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("expression", [
    "(" * 5000 + "x" + ")" * 5000,  # the parser's own limit (200 levels)
    "(" * 5000,                     # and unclosed
    "+".join(["x"] * 100_000),      # deeper than the parser's recursion limit
    "x" + ".t()" * 5000,
    "-" * 50_000 + "x",
    "not " * 20_000 + "x",
], ids=["5000-parens", "5000-open-parens", "100k-additions", "5000-method-calls", "50k-minus", "20k-not"])
def test_deeply_nested_expression_costs_only_its_function(expression):
    text = MODEL.replace("return y.item()", f"return y.item() + {expression}")
    started = time.perf_counter()
    report = analyse(text)
    assert time.perf_counter() - started < 5
    assert outside(findings(report), "Net.broken") == outside(BASELINE, "Net.broken")
    (problem,) = report.problems
    assert problem.span.line == 16  # where the expression is, not the class's first line


def test_nesting_just_within_the_parser_limit():
    """Trees the parser accepts but a recursive walk may not: no exception, no freeze."""
    for depth in (150, 500, 1000, 2000, 2900):
        chain = "+".join(["x"] * depth)
        text = MODEL.replace("return y.item()", f"return y.item() + {chain}")
        report = analyse(text)
        assert outside(findings(report), "Net.broken") == outside(BASELINE, "Net.broken")


# --- whitespace and line endings -------------------------------------------------------------

def test_empty_and_blank_files():
    for text in ["", "\n", "   \n\t\n", "# only a comment\n", "\x0c", '"""docstring only"""\n', "\r\n\r\n"]:
        report = analyse(text)
        assert report.findings == [] and report.problems == [], repr(text)


def test_tab_indentation():
    text = MODEL.replace("    ", "\t")
    report = analyse(text)
    assert findings(report) == BASELINE and report.problems == []
    printed = next(f for f in report.findings if f.function == "after")
    assert printed.span.column == 1  # one tab is one column


def test_inconsistent_tabs_cost_only_their_function():
    text = MODEL.replace('    print("after")\n    return x\n', '\tprint("after")\n        return x\n')
    report = analyse(text)
    assert outside(findings(report), "after") == outside(BASELINE, "after")
    assert len(report.problems) == 1 and "tab" in report.problems[0].message


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_other_line_endings(newline):
    def spans(report):
        return {(f.span.line, f.span.column, f.span.end_line, f.span.end_column, f.code) for f in report.findings}

    expected = spans(analyse(MODEL))
    report = analyse(MODEL.replace("\n", newline))
    assert spans(report) == expected and report.problems == []
    # Mixed: the first half in one style, the rest in the other.
    half = len(MODEL) // 2
    report = analyse(MODEL[:half].replace("\n", newline) + MODEL[half:])
    assert spans(report) == expected and report.problems == []


def test_form_feeds():
    # ^L between sections (PEP 8 style), in indentation, and in a comment.
    text = (MODEL.replace("\n\n@torch.compile\ndef after", "\n\x0c\n@torch.compile\ndef after")
            .replace('        print("helper")', '\x0c        print("helper")'))
    report = analyse(text)
    assert findings(report) == BASELINE and report.problems == []


@pytest.mark.parametrize("separator", ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"])
def test_line_separators_python_does_not_count(separator):
    """str.splitlines() breaks at these; Python does not. With a syntax error elsewhere in
    the class, recovery must still blank the right method."""
    text = (MODEL.replace('print("helper")', f'print("help{separator}er")  # a{separator}b')
            .replace("y = torch.relu(x)", "y = torch.relu(x"))
    report = analyse(text)
    assert outside(findings(report), "Net.broken") == outside(BASELINE, "Net.broken")
    assert [p.span.line for p in report.problems] == [15]


def test_non_ascii_identifiers_and_strings():
    text = MODEL.replace('print("after")', 'größe = "日本語"; print(größe)')
    printed = next(f for f in analyse(text).findings if f.function == "after")
    line = text.splitlines()[printed.span.line - 1]
    assert line[printed.span.column:printed.span.end_column] == "print(größe)"


# --- the installed torch package -------------------------------------------------------------

def _torch_root() -> Path | None:
    spec = importlib.util.find_spec("torch")
    return Path(next(iter(spec.submodule_search_locations))) if spec else None


def _cycle_bug_present(tmp_path) -> bool:
    """Whether the import-cycle RecursionError (see test_import_cycle_does_not_recurse) is
    still there; while it is, the scan below tolerates exactly that exception."""
    (tmp_path / "cyc_a.py").write_text("import torch\nimport cyc_b\n\n\ndef make():\n"
                                      "    model = cyc_b.Net()\n    return torch.compile(model)\n")
    (tmp_path / "cyc_b.py").write_text("import torch\nimport cyc_a\n\n\ndef make():\n"
                                      "    model = cyc_a.Net()\n    return torch.compile(model)\n")
    try:
        analyze_paths([str(tmp_path)])
    except RecursionError:
        return True
    return False


@pytest.mark.skipif(_torch_root() is None, reason="torch is not installed")
def test_scan_torch_slice(tmp_path):
    """Every .py in a large slice of torch, file by file through one Workspace (the
    language server's path): no exception, and valid files parse without problems."""
    root = _torch_root()
    folders = ["nn", "_dynamo", "_inductor", "_functorch", "_export", "optim", "distributions", "fx", "_refs",
               "_decomp", "_prims", "utils/data"]
    files = list(iter_python_files([str(root / folder) for folder in folders]))
    assert len(files) > 900
    tolerate_cycles = _cycle_bug_present(tmp_path)
    workspace = Workspace([root])  # as `fuselens check torch/`: relative imports resolve
    errors, problems = [], []
    started = time.perf_counter()
    for path in files:
        try:
            report = workspace.analyze_file(path)
        except RecursionError as error:
            if not (tolerate_cycles and "resolve_symbol" in _frames(error)):
                errors.append((path, repr(error)))
            continue
        except Exception as error:  # noqa: BLE001
            errors.append((path, repr(error)))
            continue
        problems += [(path, problem.message) for problem in report.problems]
    elapsed = time.perf_counter() - started
    assert errors == []
    assert problems == []  # these files are valid Python: any problem is a parser/splitter bug
    assert elapsed < 120


def _frames(error: BaseException) -> str:
    import traceback

    return "".join(traceback.format_tb(error.__traceback__)[-40:])


# --- regressions: analyzer bugs outside source.py ------------------------------------------

def test_import_cycle_does_not_recurse(tmp_path):
    assert not _cycle_bug_present(tmp_path)


def test_form_feed_in_comment_keeps_columns():
    text = 'import torch\n\n\n@torch.compile\ndef f(x):\n    # page\x0cbreak\n    s = "é"; print(x)\n'
    (finding,) = analyse(text).findings
    assert (finding.span.line, finding.span.column) == (7, 13)


def test_fix_after_form_feed_line():
    from fuselens.analysis import apply_edits

    text = "import torch\n\x0c\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"
    (finding,) = analyse(text).findings
    fixed = apply_edits(text, finding.fix.edits)
    assert "def f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n" in fixed


def test_each_problem_is_reported_once():
    """Reduced from torch/testing/_internal/py312_intrinsics.py: the class block (it mentions
    `compile(`) and its method's own block both hold the error."""
    text = ('class Foo:\n    @classmethod\n    def _default_update(cls):\n            """This is a test"""\n'
            '        return wrapper, f\n        @torch.compile(backend="eager", fullgraph=True)\n')
    problems = [(p.span, p.message) for p in analyse(text).problems]
    assert len(problems) == 1, problems


def test_relative_paths_are_reported_once(tmp_path, monkeypatch):
    """A file reached through an import is found under a workspace root (an absolute path);
    it is filed under the name the caller gave it, not reported twice."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "main.py").write_text(
        "import torch\nfrom helpers import shout\n\n\n@torch.compile\ndef run(x):\n    return shout(x)\n")
    (tmp_path / "pkg" / "helpers.py").write_text("def shout(t):\n    print(t)\n    return t\n")
    monkeypatch.chdir(tmp_path)
    reports = analyze_paths(["pkg"])
    assert sorted(report.path for report in reports) == ["pkg/helpers.py", "pkg/main.py"]
