"""`fuselens check` / `fuselens rules`: exit codes, output formats, rule selection, settings.

Most tests call `fuselens.cli.main` in-process (fast); a few run `python -m fuselens` in a
subprocess to check what a shell actually sees (exit status, streams, no traceback).
Every test works in its own tmp_path holding a pyproject.toml, so the settings search
stops there and never picks up the repository's own [tool.fuselens].
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fuselens.analysis import RULES
from fuselens.cli import main

REPO = Path(__file__).resolve().parents[2]

SAMPLE = textwrap.dedent('''\
    import torch


    @torch.compile
    def scale(x):
        print("scaling")
        n = x.sum().item()
        return x * n


    @torch.compile
    def pick(x, y):
        if x.sum() > 0:
            return x
        return y


    def clean(x):
        return x + 1
    ''')
# (line, code) of what SAMPLE must produce; lines are 1-based as in the file above.
SAMPLE_FINDINGS = {(6, "FL110"), (7, "FL102"), (13, "FL101")}

CLEAN = textwrap.dedent('''\
    import torch


    @torch.compile
    def add(x, y):
        return torch.relu(x + y) * 2
    ''')


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with an empty pyproject.toml, made the working directory."""
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_main(argv, capsys):
    """main() → (exit code, stdout, stderr); argparse's usage errors arrive as SystemExit."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def check_json(argv, capsys):
    code, out, err = run_main(["check", "--format", "json", *argv], capsys)
    return code, json.loads(out), err


def codes_at(findings) -> set[tuple[int, str]]:
    return {(f["line"], f["code"]) for f in findings}


# --- exit codes ------------------------------------------------------------------------------

def test_exit_1_with_findings_0_without(project, capsys):
    (project / "bad.py").write_text(SAMPLE)
    (project / "good.py").write_text(CLEAN)
    assert run_main(["check", "bad.py"], capsys)[0] == 1
    assert run_main(["check", "good.py"], capsys)[0] == 0
    assert run_main(["check", "--exit-zero", "bad.py"], capsys)[0] == 0


def test_usage_errors_exit_2(project, capsys):
    (project / "m.py").write_text(SAMPLE)
    code, _, err = run_main(["check", "missing.py"], capsys)
    assert code == 2 and "missing.py" in err
    code, _, err = run_main(["check", "m.py", "--select", "FL999"], capsys)
    assert code == 2 and "FL999" in err
    code, _, err = run_main(["check", "m.py", "--ignore", "no-such-rule"], capsys)
    assert code == 2 and "no-such-rule" in err
    assert run_main(["check", "m.py", "--format", "xml"], capsys)[0] == 2
    assert run_main(["check"], capsys)[0] == 2  # no PATH
    assert run_main(["frobnicate"], capsys)[0] == 2


def test_subprocess_exit_codes_and_streams(project):
    (project / "bad.py").write_text(SAMPLE)
    (project / "good.py").write_text(CLEAN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    def fuselens(*args):
        return subprocess.run([sys.executable, "-m", "fuselens", *args], capture_output=True, text=True,
                              cwd=project, env=env, timeout=60)

    bad, good, missing = fuselens("check", "bad.py"), fuselens("check", "good.py"), fuselens("check", "nope.py")
    assert (bad.returncode, good.returncode, missing.returncode) == (1, 0, 2)
    assert "bad.py:6:5: FL110" in bad.stdout
    assert "no findings" in good.stdout
    assert "nope.py" in missing.stderr and "Traceback" not in missing.stderr
    as_json = fuselens("check", "--format", "json", "bad.py")
    assert as_json.returncode == 1
    assert codes_at(json.loads(as_json.stdout)) == SAMPLE_FINDINGS


# --- output formats --------------------------------------------------------------------------

def test_json_fields(project, capsys):
    (project / "m.py").write_text(SAMPLE)
    code, findings, _ = check_json(["m.py"], capsys)
    assert code == 1
    assert codes_at(findings) == SAMPLE_FINDINGS
    for finding in findings:
        for key in ("path", "line", "column", "end_line", "end_column", "code", "category", "gb_type",
                    "message", "function", "fix"):
            assert key in finding, key
        assert finding["path"] == "m.py"
        rule = RULES[finding["code"]]
        assert finding["category"] == rule.category
        assert finding["gb_type"] == rule.gb_type
        assert finding["message"]
    by_code = {f["code"]: f for f in findings}
    lines = SAMPLE.splitlines()
    # Positions: 1-based lines, 0-based columns; the span covers the offending expression.
    printed = by_code["FL110"]
    assert (printed["line"], printed["column"]) == (6, 4)
    assert lines[5][printed["column"]:printed["end_column"]] == 'print("scaling")'
    item = by_code["FL102"]
    assert item["function"] == "scale" and item["end_line"] == 7
    assert lines[6][item["column"]:item["end_column"]].endswith("item()")
    assert by_code["FL101"]["function"] == "pick"
    assert by_code["FL101"]["gb_type"] == "Data-dependent branching"
    # The print fix guards the call; its edit is positioned like a finding.
    fix = printed["fix"]
    assert fix and fix["title"]
    (edit,) = fix["edits"]
    assert (edit["line"], edit["column"], edit["end_line"]) == (6, 4, 6)
    assert "is_compiling()" in edit["new_text"] and 'print("scaling")' in edit["new_text"]


def test_json_clean_is_empty_array(project, capsys):
    (project / "m.py").write_text(CLEAN)
    assert check_json(["m.py"], capsys)[:2] == (0, [])


def test_json_method_function_and_chain(project, capsys):
    (project / "net.py").write_text(textwrap.dedent('''\
        import torch
        import torch.nn as nn


        def log_value(t):
            print("value", t)
            return t


        class Net(nn.Module):
            def forward(self, x):
                return log_value(x * 2)
        '''))
    code, findings, _ = check_json(["net.py"], capsys)
    assert code == 1
    (finding,) = findings
    assert (finding["code"], finding["line"], finding["function"]) == ("FL110", 6, "log_value")
    # Related information: the call in Net.forward that reached the print.
    assert [(hop["line"], hop["function"]) for hop in finding["chain"]] == [(12, "Net.forward")]


def test_text_output(project, capsys):
    (project / "m.py").write_text(SAMPLE)
    code, out, _ = run_main(["check", "m.py"], capsys)
    assert code == 1
    # path:line:column with a 1-based column, like compilers print it.
    assert "m.py:6:5: FL110" in out
    assert "m.py:13:8: FL101" in out
    assert "in scale" in out and "in pick" in out
    assert "Found 3 findings in 1 file" in out
    _, _, err = run_main(["check", "--statistics", "m.py"], capsys)
    assert "analysed 1 files" in err and " ms" in err


def test_rules_command_lists_every_rule(capsys):
    code, out, _ = run_main(["rules"], capsys)
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line.strip()}
    assert listed == set(RULES)


# --- rule selection --------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    (["--select", "FL110"], {(6, "FL110")}),
    (["--select", "print"], {(6, "FL110")}),                       # by name
    (["--select", "print,tensor-item"], {(6, "FL110"), (7, "FL102")}),
    (["--select", "FL10"], {(7, "FL102"), (13, "FL101")}),          # prefix: FL10x
    (["--ignore", "FL110"], {(7, "FL102"), (13, "FL101")}),
    (["--ignore", "data-dependent-branch"], {(6, "FL110"), (7, "FL102")}),
    (["--ignore", "FL1"], set()),                                   # prefix covers all three
    (["--select", "FL1", "--ignore", "FL11"], {(7, "FL102"), (13, "FL101")}),
    (["--select", "fl110"], {(6, "FL110")}),                        # ids are case-insensitive
])
def test_select_and_ignore(project, capsys, argv, expected):
    (project / "m.py").write_text(SAMPLE)
    code, findings, _ = check_json([*argv, "m.py"], capsys)
    assert codes_at(findings) == expected
    assert code == (1 if expected else 0)


def test_no_modules_flag(project, capsys):
    (project / "net.py").write_text(textwrap.dedent('''\
        import torch.nn as nn


        class Net(nn.Module):
            def forward(self, x):
                print(x)
                return x
        '''))
    assert codes_at(check_json(["net.py"], capsys)[1]) == {(6, "FL110")}
    assert check_json(["--no-modules", "net.py"], capsys)[:2] == (0, [])


# --- settings in pyproject.toml --------------------------------------------------------------

def test_pyproject_settings_are_honoured(project, capsys):
    (project / "m.py").write_text(SAMPLE)
    (project / "pyproject.toml").write_text('[tool.fuselens]\nignore = ["print", "FL101"]\n')
    assert codes_at(check_json(["m.py"], capsys)[1]) == {(7, "FL102")}
    (project / "pyproject.toml").write_text('[tool.fuselens]\nselect = ["FL101"]\n')
    assert codes_at(check_json(["m.py"], capsys)[1]) == {(13, "FL101")}
    # Command-line selection overrides the file's.
    assert codes_at(check_json(["--select", "FL110", "m.py"], capsys)[1]) == {(6, "FL110")}


def test_pyproject_found_above_the_checked_path(project, capsys):
    (project / "pyproject.toml").write_text('[tool.fuselens]\nignore = ["FL110"]\n')
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "m.py").write_text(SAMPLE)
    assert codes_at(check_json(["src/pkg/m.py"], capsys)[1]) == {(7, "FL102"), (13, "FL101")}


def test_pyproject_exclude_and_modules_setting(project, capsys):
    (project / "generated").mkdir()
    (project / "generated" / "m.py").write_text(SAMPLE)
    (project / "net.py").write_text("import torch.nn as nn\n\nclass Net(nn.Module):\n"
                                    "    def forward(self, x):\n        print(x)\n        return x\n")
    assert {f["path"] for f in check_json(["."], capsys)[1]} == {"./generated/m.py", "./net.py"}
    (project / "pyproject.toml").write_text(
        '[tool.fuselens]\nexclude = ["generated"]\nassume-modules-compiled = false\n')
    assert check_json(["."], capsys)[:2] == (0, [])


@pytest.mark.parametrize("settings, mentions", [
    ('[tool.fuselens]\nselekt = ["FL110"]\n', "selekt"),          # unknown key
    ('[tool.fuselens]\nselect = ["FL999"]\n', "FL999"),           # unknown rule
    ('[tool.fuselens]\nignore = ["no-such-rule"]\n', "no-such-rule"),
    ('[tool.fuselens\nselect = 1\n', "pyproject.toml"),           # not TOML
])
def test_bad_pyproject_exits_2(project, capsys, settings, mentions):
    (project / "m.py").write_text(SAMPLE)
    (project / "pyproject.toml").write_text(settings)
    code, out, err = run_main(["check", "m.py"], capsys)
    assert code == 2
    assert mentions in err
    assert out == ""


# --- suppression comments --------------------------------------------------------------------

def test_ignore_comment_with_code(project, capsys):
    text = SAMPLE.replace('print("scaling")', 'print("scaling")  # fuselens: ignore[FL110]')
    (project / "m.py").write_text(text)
    assert codes_at(check_json(["m.py"], capsys)[1]) == {(7, "FL102"), (13, "FL101")}


def test_ignore_comment_for_another_code_does_not_suppress(project, capsys):
    text = SAMPLE.replace('print("scaling")', 'print("scaling")  # fuselens: ignore[FL102]')
    (project / "m.py").write_text(text)
    assert codes_at(check_json(["m.py"], capsys)[1]) == SAMPLE_FINDINGS


def test_bare_ignore_comment_and_lists(project, capsys):
    text = (SAMPLE.replace('print("scaling")', 'print("scaling")  # fuselens: ignore')
            .replace("if x.sum() > 0:", "if x.sum() > 0:  # noqa: E501  # fuselens: ignore[FL999, FL101]"))
    (project / "m.py").write_text(text)
    assert codes_at(check_json(["m.py"], capsys)[1]) == {(7, "FL102")}


def test_ignore_comment_only_covers_its_own_line(project, capsys):
    text = SAMPLE.replace("def scale(x):", "def scale(x):  # fuselens: ignore")
    (project / "m.py").write_text(text)
    assert codes_at(check_json(["m.py"], capsys)[1]) == SAMPLE_FINDINGS


# --- unreadable inputs -----------------------------------------------------------------------

def test_unreadable_files_warn_and_do_not_crash(project, capsys):
    (project / "latin.py").write_bytes(b"import torch\n\n@torch.compile\ndef f(x):\n    return x  # caf\xe9\n")
    (project / "blob.py").write_bytes(bytes(range(256)) * 8)
    (project / "gone.py").symlink_to(project / "nowhere" / "x.py")
    (project / "halfway.py").write_text("import torch\n\n@torch.compile\ndef f(x):\n    return torch.cat((x,\n")
    (project / "m.py").write_text(SAMPLE)
    code, findings, err = check_json(["."], capsys)
    assert code == 1  # m.py's findings are still reported
    assert codes_at(findings) == SAMPLE_FINDINGS
    assert "latin.py" in err and "utf-8" in err.lower()
    assert "blob.py" in err and "binary" in err
    assert "gone.py" in err
    assert "halfway.py: warning: syntax error: '(' was never closed (line 5)" in err
    assert "Traceback" not in err
    # Alone, an unreadable file is a warning, not a finding and not a usage error.
    assert run_main(["check", "latin.py"], capsys)[0] == 0
