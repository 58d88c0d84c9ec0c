#!/usr/bin/env bash
# Installs everything FuseLens needs on a fresh Debian machine (idempotent, quiet when done).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)        # the C++/OpenMP back end
command -v nvim >/dev/null 2>&1 || need_apt+=(neovim)    # second LSP client in the tests
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# torch==2.13.0 is pinned: a looser pin pulls GBs of CUDA wheels.
stamp=.setup-stamp
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
        || ! python3 -c "import fuselens.analysis, torch, pygls, pytest_lsp" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    touch "$stamp"
fi
bash scripts/setup-extension.sh   # the VS Code extension and its tests (vscode-extension/)
