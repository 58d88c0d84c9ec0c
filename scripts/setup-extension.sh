#!/usr/bin/env bash
# Installs what the VS Code extension and its tests need (idempotent, quiet when done):
#   vscode-extension/node_modules      the extension's npm packages (npm ci)
#   vscode-extension/e2e/node_modules  code-server 4.100.3 (a real VS Code, from npm) and playwright-core
#   chromium                           Debian's, driven headless by Playwright
# The extension's own packages must install (a failure stops here). A machine that cannot get the test
# browser or code-server only loses the extension tests: the reason is written to
# vscode-extension/e2e/node_modules/.setup-problem and tests/extension skips with it.
set -euo pipefail
cd "$(dirname "$0")/../vscode-extension"

problem_file=e2e/node_modules/.setup-problem
log=$(mktemp)
trap 'rm -f "$log"' EXIT

unavailable() {
    mkdir -p "$(dirname "$problem_file")"
    echo "$1" > "$problem_file"
    echo "setup-extension: the extension tests will be skipped: $1" >&2
    exit 0
}

rm -f "$problem_file"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    unavailable "Node.js 20 and npm are not installed (https://nodejs.org)"
fi

# The extension's own packages.
stamp=node_modules/.fuselens-setup-stamp
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
    if ! npm ci --no-audit --no-fund >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        exit 1
    fi
    touch "$stamp"
fi

# The browser, and what code-server's native modules build with.
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)   # seeds @vscode/ripgrep, which would download rg from GitHub
command -v g++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1 || need_apt+=(build-essential)
[ -f /usr/include/krb5.h ] || [ -f /usr/include/krb5/krb5.h ] || need_apt+=(libkrb5-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
            "${need_apt[@]}"; } >"$log" 2>&1; then
        unavailable "apt-get could not install ${need_apt[*]}: $(tail -n 3 "$log" | tr '\n' ' ')"
    fi
fi

# code-server and playwright-core.
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || unavailable "code-server 4.100.3 runs on Node 20, this is Node $(node --version)"
stamp=e2e/node_modules/.fuselens-setup-stamp
if [ ! -f "$stamp" ] || [ e2e/package-lock.json -nt "$stamp" ] || [ ! -x e2e/node_modules/.bin/code-server ]; then
    # @vscode/ripgrep's postinstall looks in this cache before downloading (1.15.11: code-server 4.100.3's pin).
    rg_cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
    mkdir -p "$rg_cache"
    tar czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
    # nodedir: node-gyp would download Node's headers (NodeSource's node ships them);
    # yes: node-pty's postinstall runs `npx node-gyp`, which a user's `yes=false` would cancel.
    node_prefix=$(dirname "$(dirname "$(command -v node)")")
    if ! (cd e2e && npm_config_nodedir="$node_prefix" npm_config_yes=true npm ci --no-audit --no-fund --unsafe-perm) >"$log" 2>&1; then
        unavailable "npm could not install code-server: $(grep -m 3 -i 'err' "$log" | tr '\n' ' ')"
    fi
    touch "$stamp"
fi
