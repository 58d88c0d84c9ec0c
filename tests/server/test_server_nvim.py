"""A second real client: headless Neovim receives the diagnostics and offers the quick fixes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_harness import SAMPLE

NVIM = shutil.which("nvim")
PROBE = Path(__file__).with_name("nvim") / "probe.lua"


@pytest.mark.skipif(NVIM is None, reason="nvim not installed (Debian: apt-get install neovim)")
def test_neovim_shows_fuselens_diagnostics_and_quick_fixes(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(SAMPLE)
    env = dict(os.environ, LSP_CMD=f"{sys.executable} -m fuselens.server", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    run = subprocess.run([NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {PROBE}", str(path)],
                         env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    diagnostics = [line.split(" ", 4)[1:] for line in run.stdout.splitlines() if line.startswith("DIAG ")]
    assert [(where, source, code) for where, source, code, _ in diagnostics] == [
        ("6:4", "fuselens", "FL110"), ("7:10", "fuselens", "FL102"), ("17:4", "fuselens", "FL110")]
    actions = [line[len("ACTION "):] for line in run.stdout.splitlines() if line.startswith("ACTION ")]
    assert "Ignore FL110 on this line" in actions and len(actions) == 2
