// Bundles the extension (src/extension.ts -> dist/extension.js) or, with --tests, the extension
// tests (test/**/*.ts -> out/test/, run inside VS Code by e2e/run-extension-tests.js).
import * as esbuild from 'esbuild';
import { readdirSync } from 'fs';
import { join } from 'path';

const tests = process.argv.includes('--tests');
const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', external: ['vscode', 'mocha'], sourcemap: true, logLevel: 'warning' };

function testEntries(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testEntries(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []);
}

if (tests) {
  await esbuild.build({ ...common, entryPoints: testEntries('test'), outdir: 'out/test', outbase: 'test' });
} else {
  await esbuild.build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', minify: process.argv.includes('--minify') });
}
