"""The VS Code extension (vscode-extension/), tested inside a real VS Code: code-server from npm,
headless Chromium, Playwright. Nothing is mocked: the extension starts the real FuseLens server.

Two runs, each a Node script that writes its outcomes as JSON:
- e2e/run-extension-tests.js: the extension's mocha tests inside VS Code's extension host, in a
  trusted and in an untrusted copy of vscode-extension/sample-project;
- e2e/ui-tour.js: the packaged .vsix installed into code-server and used like a person (hover, code
  lens, profile panel), with screenshots.
Every test and tour step listed below is one pytest test; a test that ran but is not listed fails too.
scripts/setup-extension.sh installs what this needs; without Node, code-server or Chromium the
tests skip with the reason it recorded.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vscode")]  # one code-server setup

EXTENSION = Path(__file__).resolve().parents[2] / "vscode-extension"
E2E = EXTENSION / "e2e"
SETUP_PROBLEM = E2E / "node_modules" / ".setup-problem"
CHROMIUM = os.environ.get("FUSELENS_CHROMIUM", "/usr/bin/chromium")

EXTENSION_TESTS = [
    ("trusted", "diagnostics appear for the sample file"),
    ("trusted", "a quick fix applies and its warning goes away"),
    ("trusted", "the language status shows the torch version and the CPU/C++ backend"),
    ("trusted", "a missing Python or FuseLens is reported, and fixing the setting restarts the server"),
    ("trusted", "FuseLens: Restart Server starts a new server and diagnostics come back"),
    ("trusted", "Explain with Dynamo shows its graph break as a diagnostic"),
    ("trusted", "Compile and profile produces a kernel document and the profile panel"),
    ("trusted", "provenance comments in a kernel link back to the source lines"),
    ("trusted", "the \"→ kernel\" code lens on the source opens that kernel"),
    ("trusted", "Show Transformed Program at the cursor opens a Python document beside the source"),
    ("untrusted", "the workspace is not trusted"),
    ("untrusted", "the workspace's interpreter and execution settings are withheld, and the server starts"),
    ("untrusted", "diagnostics still appear"),
    ("untrusted", "Compile and profile refuses to run code"),
    ("untrusted", "the server refuses too: it was told the workspace is untrusted"),
    ("untrusted", "once the user trusts the workspace, the server accepts runs without restarting"),
]
UI_STEPS = [
    "the workbench opens the sample project",
    "model.py opens from Quick Open",
    "hovering the print() squiggle explains the graph break",
    "the \"Compile and profile\" code lens opens a kernel beside the source",
    "the profile panel shows the timings and the kernels",
    "clicking a kernel in the panel opens its document in the panel's group",
    "cancelling a running profile stops it",
]
SCREENSHOTS = ["hover.png", "kernel-beside-source.png", "profile-panel.png"]


def _tools_or_skip() -> None:
    if SETUP_PROBLEM.exists():
        pytest.skip(f"VS Code tests unavailable on this machine: {SETUP_PROBLEM.read_text().strip()}")
    missing = [what for what, path in [("node", shutil.which("node")), ("chromium", Path(CHROMIUM).exists() or None),
                                       ("code-server", (E2E / "node_modules" / ".bin" / "code-server").exists() or None)]
               if not path]
    if missing:
        pytest.skip(f"VS Code tests need {', '.join(missing)}: run scripts/setup-extension.sh")
    assert (EXTENSION / "node_modules" / ".bin" / "esbuild").exists(), \
        "vscode-extension/node_modules is missing: scripts/setup-extension.sh installs it"


def _run(command: list[str], timeout: float) -> str:
    """Runs a Node step; on timeout it gets SIGTERM first, so it can stop the code-server it started."""
    process = subprocess.Popen(command, cwd=EXTENSION, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        output += f"\n[killed after {timeout} s]"
    print(output[-6000:])  # shown by pytest for a failing test
    return output


def _build(command: list[str]) -> None:
    result = subprocess.run(command, cwd=EXTENSION, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def extension_results(tmp_path_factory) -> tuple[dict, str]:
    _tools_or_skip()
    _build(["node", "esbuild.mjs"])
    _build(["node", "esbuild.mjs", "--tests"])
    results = tmp_path_factory.mktemp("vscode") / "extension-tests.json"
    output = _run(["node", "e2e/run-extension-tests.js", str(results)], timeout=420)
    assert results.exists(), f"the extension tests wrote no results:\n{output[-4000:]}"
    return json.loads(results.read_text()), output


@pytest.fixture(scope="module")
def vsix(tmp_path_factory) -> Path:
    _tools_or_skip()
    path = tmp_path_factory.mktemp("vsix") / "fuselens.vsix"
    _build(["npm", "run", "--silent", "package", "--", "-o", str(path)])
    return path


@pytest.fixture(scope="module")
def ui_tour(vsix, tmp_path_factory) -> tuple[dict, Path, str]:
    shots = tmp_path_factory.mktemp("screenshots")
    results = shots / "ui-tour.json"
    output = _run(["node", "e2e/ui-tour.js", str(vsix), str(shots), str(results)], timeout=360)
    assert results.exists(), f"the UI tour wrote no results:\n{output[-4000:]}"
    return json.loads(results.read_text()), shots, output


def _explain(entry: dict, output: str) -> str:
    return f"{entry.get('state')}: {entry.get('error') or ''}\n--- log ---\n{output[-4000:]}"


@pytest.mark.parametrize("suite,title", EXTENSION_TESTS, ids=[f"{s}: {t}" for s, t in EXTENSION_TESTS])
def test_extension_in_vscode(extension_results, suite, title):
    results, output = extension_results
    run = results["suites"].get(suite)
    assert run is not None, f"the {suite} suite did not run:\n{output[-4000:]}"
    assert "error" not in run, f"the {suite} suite could not run: {run['error']}"
    entry = next((test for test in run["tests"] if test["title"] == title), None)
    assert entry is not None, (f"{title!r} did not run in the {suite} suite (exit code {run['exitCode']})\n{output[-4000:]}"
                               f"\n--- code-server log ---\n{run.get('codeServerLog', '')}")
    assert entry["state"] == "passed", _explain(entry, output)


def test_every_extension_test_is_listed(extension_results):
    results, _output = extension_results
    ran = {(suite, test["title"]) for suite, run in results["suites"].items() for test in run["tests"]}
    assert ran == set(EXTENSION_TESTS), f"not listed here: {ran - set(EXTENSION_TESTS)}; did not run: {set(EXTENSION_TESTS) - ran}"
    assert all(run["exitCode"] == 0 for run in results["suites"].values())


@pytest.mark.parametrize("title", UI_STEPS)
def test_ui_tour(ui_tour, title):
    results, _shots, output = ui_tour
    entry = next((step for step in results["steps"] if step["title"] == title), None)
    assert entry is not None, f"the tour did not reach {title!r}\n{output[-4000:]}"
    assert entry["state"] == "passed", _explain(entry, output)


def test_ui_tour_takes_the_readme_screenshots(ui_tour):
    results, shots, _output = ui_tour
    assert [step["title"] for step in results["steps"]] == UI_STEPS
    for name in SCREENSHOTS:
        png = (shots / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 20_000, f"{name} is not a real screenshot"
        assert (EXTENSION / "media" / name).exists(), f"media/{name} (the README's copy) is missing"


def test_vsix_holds_the_bundle_and_no_sources(vsix):
    names = set(zipfile.ZipFile(vsix).namelist())
    for needed in ["extension/package.json", "extension/dist/extension.js", "extension/readme.md"]:
        assert needed in names, f"{needed} is not in the .vsix ({sorted(names)})"
    assert {f"extension/media/{name}" for name in SCREENSHOTS} <= names
    assert not [name for name in names if "/node_modules/" in name or "/src/" in name or name.endswith(".ts")]
    manifest = json.loads(zipfile.ZipFile(vsix).read("extension/package.json"))
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
