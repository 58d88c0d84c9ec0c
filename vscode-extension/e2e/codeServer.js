// A real VS Code for tests: code-server (VS Code for the browser, from npm) on 127.0.0.1, and
// headless Chromium driven by Playwright. Each run gets its own user data, extensions, XDG and temp
// folders, so nothing is written to the home folder and no extension host outlives the run.
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const CODE_SERVER = path.join(__dirname, 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.FUSELENS_CHROMIUM || '/usr/bin/chromium';

const QUIET_SETTINGS = {
  'workbench.startupEditor': 'none', 'telemetry.telemetryLevel': 'off', 'update.mode': 'none',
  'extensions.autoCheckUpdates': false, 'extensions.autoUpdate': false, 'extensions.ignoreRecommendations': true,
  'workbench.tips.enabled': false, 'chat.disableAIFeatures': true, 'chat.commandCenter.enabled': false,
  'workbench.enableExperiments': false, 'git.enabled': false, 'files.autoSave': 'off', 'editor.minimap.enabled': false,
  // Short profiles: the tests check what is shown, not the numbers.
  'fuselens.profile.repeats': 5,
};

// Every code-server started here is stopped when this process ends, however it ends.
const running = new Set();
process.on('exit', () => running.forEach((stop) => stop()));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1)));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function healthy(port) {
  return new Promise((resolve) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/healthz', timeout: 2000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('error', () => resolve(false));
    request.on('timeout', () => { request.destroy(); resolve(false); });
  });
}

/**
 * Starts code-server. `trust: false` leaves workspace trust on (folders start untrusted, no prompt);
 * `settings` are added to the user settings; `env` to the environment of the server and its
 * extension host. Returns { url, stop(), log }.
 */
async function startCodeServer({ runDir, trust = true, settings = {}, env = {}, extensionsDir }) {
  const dirs = { user: path.join(runDir, 'user-data'), xdg: path.join(runDir, 'xdg'), tmp: path.join(runDir, 'tmp') };
  const extensions = extensionsDir || path.join(runDir, 'extensions');
  for (const dir of [path.join(dirs.user, 'User'), dirs.xdg, dirs.tmp, extensions]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  const trustSettings = trust
    ? { 'security.workspace.trust.enabled': false }
    : { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.banner': 'always', 'security.workspace.trust.emptyWindow': false };
  fs.writeFileSync(path.join(dirs.user, 'User', 'settings.json'),
                   JSON.stringify({ ...QUIET_SETTINGS, ...trustSettings, ...settings }, null, 2));
  const port = await freePort();
  const log = path.join(runDir, 'code-server.log');
  const args = ['--config', '/dev/null', '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none',
                '--user-data-dir', dirs.user, '--extensions-dir', extensions, '--disable-telemetry',
                '--disable-update-check', '--disable-getting-started-override', '--ignore-last-opened',
                ...(trust ? ['--disable-workspace-trust'] : [])];
  const child = spawn(CODE_SERVER, args, {
    detached: true, // its own process group: stop() ends code-server and every extension host it started
    stdio: ['ignore', fs.openSync(log, 'w'), fs.openSync(log, 'a')],
    env: { ...process.env, XDG_DATA_HOME: path.join(dirs.xdg, 'data'), XDG_CACHE_HOME: path.join(dirs.xdg, 'cache'),
           XDG_CONFIG_HOME: path.join(dirs.xdg, 'config'), TMPDIR: dirs.tmp,
           // Compiled kernels (FuseLens' and Inductor's) are cached across runs, as on a developer's machine.
           FUSELENS_CACHE_DIR: path.join(os.tmpdir(), 'fuselens-e2e-cache', 'fuselens'),
           TORCHINDUCTOR_CACHE_DIR: path.join(os.tmpdir(), 'fuselens-e2e-cache', 'inductor'), ...env },
  });
  const stop = () => {
    running.delete(stop);
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  running.add(stop);
  const deadline = Date.now() + 60_000;
  while (!(await healthy(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      stop();
      throw new Error(`code-server did not start:\n${fs.readFileSync(log, 'utf8').slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { url: `http://127.0.0.1:${port}`, stop, log };
}

async function launchBrowser() {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM} (scripts/setup-extension.sh installs Debian's chromium)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
           '--disable-component-update', '--no-first-run', '--disable-sync',
           // A page answered through page.route counts as public; without this Chromium blocks its ws://127.0.0.1.
           '--disable-features=LocalNetworkAccessChecks'],
  });
}

/** Extension-development URL: loads `extensionPath` (and runs `testsPath`, if given) in `folder`. */
function developmentUrl(base, folder, extensionPath, testsPath) {
  const remote = (file) => `vscode-remote://${new URL(base).host}${file}`;
  const payload = [['extensionDevelopmentPath', remote(extensionPath)], ['skipWelcome', 'true']];
  if (testsPath) {
    payload.push(['extensionTestsPath', remote(testsPath)]);
  }
  return `${base}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

/**
 * Built web clients ignore the development payload unless developmentOptions.enableSmokeTestDriver
 * is set, and code-server has no flag for it: turn it on in the served workbench page.
 */
async function enableDevelopmentPayload(page) {
  await page.route((url) => url.pathname === '/' && url.searchParams.has('payload'), async (route) => {
    const response = await route.fetch();
    const body = (await response.text()).replace('developmentOptions&quot;:{',
                                                 'developmentOptions&quot;:{&quot;enableSmokeTestDriver&quot;:true,');
    await route.fulfill({ response, body });
  });
}

module.exports = { startCodeServer, launchBrowser, developmentUrl, enableDevelopmentPayload };
