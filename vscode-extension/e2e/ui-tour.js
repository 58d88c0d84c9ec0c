// Uses FuseLens in a real VS Code the way a person does: installs the packaged .vsix into code-server,
// opens the sample project, hovers a graph-break squiggle, clicks the "Compile and profile" code lens,
// and takes screenshots of the kernel beside the source and of the profile panel; then clicks a kernel
// in the panel. Each step is reported as JSON (the pytest side reads it).
// usage: node e2e/ui-tour.js VSIX SCREENSHOT_DIR RESULTS_JSON
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { launchBrowser, startCodeServer } = require('./codeServer');

const SAMPLE = path.resolve(__dirname, '..', 'sample-project');
const CODE_SERVER = path.join(__dirname, 'node_modules', '.bin', 'code-server');
const VIEWPORT = { width: 1280, height: 760 };

async function tour(page, shots, step) {
  await step('the workbench opens the sample project', async () => {
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    await page.waitForSelector('.explorer-folders-view .monaco-list-row[aria-label*="model.py"]', { timeout: 60_000 });
  });
  await step('model.py opens from Quick Open', async () => {
    await page.keyboard.press('Control+p');
    await page.waitForSelector('.quick-input-widget input', { state: 'visible' });
    await page.keyboard.type('model.py');
    await page.waitForSelector('.quick-input-list .monaco-list-row', { timeout: 30_000 });
    await page.keyboard.press('Enter');
    await page.waitForSelector('.editor-instance .view-lines >> text=def rms_norm', { timeout: 30_000 });
    if (await page.locator('.part.sidebar').isVisible()) {
      await page.keyboard.press('Control+b'); // room for the source and the kernel side by side
    }
  });
  await step('hovering the print() squiggle explains the graph break', async () => {
    const squiggle = page.locator('.squiggly-warning').first();
    await squiggle.waitFor({ timeout: 90_000 });
    const line = page.locator('.view-line', { hasText: 'print("gelu_scale"' });
    const hover = page.locator('.monaco-hover >> text=print() splits the graph');
    // a hover can be lost while the editor still lays out (the sidebar just closed): move in again
    for (let attempt = 1; ; attempt++) {
      const box = await line.boundingBox();
      await page.mouse.move(VIEWPORT.width - 10, VIEWPORT.height / 2);
      await page.mouse.move(box.x + 90, box.y + box.height / 2);
      try {
        await hover.waitFor({ timeout: 15_000 });
        break;
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
    await page.waitForTimeout(500); // the hover fades in
    await page.screenshot({ path: path.join(shots, 'hover.png') });
    await page.mouse.move(VIEWPORT.width - 10, VIEWPORT.height / 2);
  });
  await step('the "Compile and profile" code lens opens a kernel beside the source', async () => {
    const lens = page.locator('.codelens-decoration a', { hasText: 'Compile and profile' }).first();
    await lens.waitFor({ timeout: 60_000 });
    await lens.click();
    await page.waitForSelector('.tab .label-name >> text=/^kernel\\d+\\.(cpp|py)$/', { timeout: 240_000 });
    await page.waitForSelector('.tab >> text=Profile · rms_norm', { timeout: 30_000 });
    await page.waitForSelector('.view-lines >> text=/kernel\\s+kernel\\d+/', { timeout: 30_000 });
    await page.waitForSelector('.codelens-decoration >> text=/→ kernel\\d+/', { timeout: 30_000 });
    await page.waitForTimeout(1000);
    await page.screenshot({ path: path.join(shots, 'kernel-beside-source.png') });
  });
  await step('the profile panel shows the timings and the kernels', async () => {
    await page.locator('.tab', { hasText: 'Profile · rms_norm' }).click();
    const view = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
    await view.locator('text=FuseLens profile of').waitFor({ timeout: 30_000 });
    await view.locator('.bar-row', { hasText: 'FuseLens' }).waitFor();
    await view.locator('a[data-kernel]').first().waitFor();
    await page.waitForTimeout(500);
    await page.screenshot({ path: path.join(shots, 'profile-panel.png') });
  });
  await step('clicking a kernel in the panel opens its document in the panel\'s group', async () => {
    const view = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
    const link = view.locator('a[data-kernel]').first();
    const name = await link.getAttribute('data-kernel');
    await link.click();
    const panelGroup = page.locator('.editor-group-container', { has: page.locator('.tab', { hasText: 'Profile · rms_norm' }) });
    await panelGroup.locator('.tab.active .label-name', { hasText: new RegExp(`^${name}\\.(cpp|py)$`) }).waitFor({ timeout: 30_000 });
  });
  await step('cancelling a running profile stops it', async () => {
    await page.locator('.tab', { hasText: 'model.py' }).first().click();
    await page.keyboard.press('Control+g'); // scroll to class Gate
    await page.keyboard.type('31');
    await page.keyboard.press('Enter');
    const lenses = page.locator('.codelens-decoration a', { hasText: /^Compile and profile$/ });
    await lenses.last().click(); // Gate.forward
    const toast = page.locator('.notification-toast', { hasText: 'Compile and profile · Gate.forward' });
    await toast.waitFor({ timeout: 30_000 });
    await toast.locator('.monaco-button', { hasText: 'Cancel' }).click();
    // The toast stays until the server answers the cancelled request: it kills the worker first.
    await toast.waitFor({ state: 'detached', timeout: 10_000 });
    await page.waitForTimeout(3000);
    if (await page.locator('.tab', { hasText: 'Profile · Gate.forward' }).count()) {
      throw new Error('the cancelled profile still finished');
    }
  });
}

(async () => {
  const [vsix, shots, resultsPath] = process.argv.slice(2);
  if (!vsix || !shots || !resultsPath) {
    console.error('usage: node e2e/ui-tour.js VSIX SCREENSHOT_DIR RESULTS_JSON');
    process.exit(2);
  }
  fs.mkdirSync(shots, { recursive: true });
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuselens-ui-'));
  const steps = [];
  const write = () => fs.writeFileSync(resultsPath, JSON.stringify({ steps }, null, 2));
  const started = Date.now();
  let server;
  let browser;
  try {
    const workspace = path.join(runDir, 'sample-project');
    fs.cpSync(SAMPLE, workspace, { recursive: true });
    const extensions = path.join(runDir, 'extensions');
    execFileSync(CODE_SERVER, ['--config', '/dev/null', '--user-data-dir', path.join(runDir, 'user-data'),
                               '--extensions-dir', extensions, '--install-extension', path.resolve(vsix)], { stdio: 'inherit' });
    server = await startCodeServer({ runDir, extensionsDir: extensions, settings: { 'workbench.colorTheme': 'Default Dark Modern' } });
    browser = await launchBrowser();
    const page = await browser.newPage({ viewport: VIEWPORT });
    let failed = false;
    const step = async (title, body) => {
      if (failed) {
        steps.push({ title, state: 'skipped' });
        write();
        return;
      }
      const t0 = Date.now();
      try {
        await body();
        steps.push({ title, state: 'passed', seconds: (Date.now() - t0) / 1000 });
      } catch (error) {
        failed = true;
        const shot = path.join(shots, `failed-${steps.length}.png`);
        await page.screenshot({ path: shot }).catch(() => undefined);
        steps.push({ title, state: 'failed', seconds: (Date.now() - t0) / 1000, error: String(error.stack || error), screenshot: shot });
      }
      console.log(`[ui ${((Date.now() - started) / 1000).toFixed(1)}s] ${steps[steps.length - 1].state}: ${title}`);
      write();
    };
    await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
    await tour(page, shots, step);
  } finally {
    await browser?.close();
    server?.stop();
    fs.rmSync(runDir, { recursive: true, force: true });
    write();
  }
  process.exit(steps.length && steps.every((item) => item.state === 'passed') ? 0 : 1);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
