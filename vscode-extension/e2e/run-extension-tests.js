// Runs the extension tests inside a real VS Code: each suite (trusted, untrusted workspace) in a fresh
// code-server with a copy of the sample project. VS Code runs mocha in its extension host
// (out/test/<suite>/index.js); each test's outcome lands in a JSON file.
// usage: node e2e/run-extension-tests.js RESULTS_JSON [SUITE...]     (exit code 0 = all passed)
const fs = require('fs');
const os = require('os');
const path = require('path');
const { developmentUrl, enableDevelopmentPayload, launchBrowser, startCodeServer } = require('./codeServer');

const EXTENSION = path.resolve(__dirname, '..');
const SAMPLE = path.join(EXTENSION, 'sample-project');
const SUITE_TIMEOUT_MS = 240_000;

const SUITES = {
  trusted: { trust: true, workspaceSettings: null },
  // Restricted settings of the workspace: VS Code withholds them until the user trusts it.
  untrusted: { trust: false, workspaceSettings: { 'fuselens.interpreter': ['python3'], 'fuselens.worker.timeoutS': 30 } },
};

/**
 * What a test inside VS Code can ask the person at the keyboard to do, by logging `FUSELENS-E2E <request>`
 * (the extension host's console reaches the page's).
 */
const REQUESTS = {
  // Workspaces: Manage Workspace Trust, then the editor's "Trust" button.
  'grant-trust': async (page) => {
    await page.keyboard.press('F1');
    await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
    await page.keyboard.type('Manage Workspace Trust');
    await page.waitForSelector('.quick-input-list .monaco-list-row >> text=Manage Workspace Trust', { timeout: 30_000 });
    await page.keyboard.press('Enter');
    await page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first().click({ timeout: 30_000 });
  },
};

const lap = (start) => `${((Date.now() - start) / 1000).toFixed(1)}s`;

async function runSuite(name, runRoot) {
  const start = Date.now();
  const { trust, workspaceSettings } = SUITES[name];
  const runDir = path.join(runRoot, name);
  const workspace = path.join(runDir, 'workspace');
  fs.cpSync(SAMPLE, workspace, { recursive: true });
  if (workspaceSettings) {
    fs.mkdirSync(path.join(workspace, '.vscode'));
    fs.writeFileSync(path.join(workspace, '.vscode', 'settings.json'), JSON.stringify(workspaceSettings));
  }
  const resultsFile = path.join(runDir, 'results.json');
  const server = await startCodeServer({ runDir, trust, env: { FUSELENS_TEST_RESULTS: resultsFile } });
  console.log(`[${name} ${lap(start)}] code-server ready at ${server.url}`);
  const browser = await launchBrowser();
  let exitCode;
  try {
    const page = await browser.newPage();
    page.on('console', (message) => {
      const text = message.text();
      console.log(`[${name} page] ${text}`);
      const request = /FUSELENS-E2E (\S+)/.exec(text)?.[1];
      if (request) {
        REQUESTS[request](page).catch((error) => console.log(`[${name}] could not ${request}: ${error}`));
      }
    });
    const exited = new Promise((resolve) => page.exposeFunction('codeAutomationExit', resolve));
    await page.exposeFunction('codeAutomationLog', () => undefined);
    await enableDevelopmentPayload(page);
    await page.goto(developmentUrl(server.url, workspace, EXTENSION, path.join(EXTENSION, 'out', 'test', name)));
    exitCode = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), SUITE_TIMEOUT_MS))]);
  } finally {
    await browser.close();
    server.stop();
  }
  const seconds = (Date.now() - start) / 1000;
  console.log(`[${name} ${lap(start)}] VS Code exited with ${exitCode}`);
  const tests = fs.existsSync(resultsFile) ? JSON.parse(fs.readFileSync(resultsFile, 'utf8')).tests : [];
  return { exitCode, seconds, tests, codeServerLog: fs.readFileSync(server.log, 'utf8').slice(-3000) };
}

(async () => {
  const [resultsPath, ...names] = process.argv.slice(2);
  if (!resultsPath) {
    console.error('usage: node e2e/run-extension-tests.js RESULTS_JSON [trusted] [untrusted]');
    process.exit(2);
  }
  const runRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'fuselens-vscode-'));
  const results = { suites: {} };
  try {
    for (const name of names.length ? names : Object.keys(SUITES)) {
      results.suites[name] = await runSuite(name, runRoot).catch((error) => ({ exitCode: 'error', error: String(error.stack || error), tests: [] }));
      fs.writeFileSync(resultsPath, JSON.stringify(results, null, 2));
    }
  } finally {
    fs.rmSync(runRoot, { recursive: true, force: true });
  }
  const failed = Object.values(results.suites).some((suite) => suite.exitCode !== 0);
  process.exit(failed ? 1 : 0);
})();
