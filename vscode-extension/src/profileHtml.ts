// The profile panel's page: a bar chart of eager / torch.compile / FuseLens times, the kernels
// (time, bytes moved, GB/s), graph breaks and guards. Theme colours only (--vscode-*); a nonce CSP.
import { Kernel, Profile } from './protocol';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c] as string));
}

function milliseconds(value: number | null): string {
  if (value === null) {
    return '—';
  }
  return value >= 100 ? `${value.toFixed(0)} ms` : value >= 1 ? `${value.toFixed(2)} ms` : `${(value * 1000).toFixed(1)} µs`;
}

function bytes(value: number | null): string {
  if (value === null) {
    return '—';
  }
  const units = ['B', 'KB', 'MB', 'GB'];
  let scaled = value;
  let unit = 0;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit++;
  }
  return `${scaled.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function bars(profile: Profile): string {
  const { eagerMs, torchCompileMs, fuselensMs, repeats } = profile.timings;
  const rows: [string, number | null, string][] = [
    ['eager', eagerMs, 'eager'],
    ['torch.compile', torchCompileMs, 'inductor'],
    ['FuseLens', fuselensMs, 'fuselens'],
  ];
  const longest = Math.max(...rows.map(([, ms]) => ms ?? 0), Number.MIN_VALUE);
  const body = rows.map(([label, ms, kind]) => {
    const width = ms === null ? 0 : Math.max(1, (100 * ms) / longest);
    return `<div class="bar-row"><span class="bar-label">${label}</span>` +
      // SVG geometry, not a style attribute: the CSP allows no inline styles.
      `<svg class="bar-track" viewBox="0 0 100 10" preserveAspectRatio="none"><rect class="bar ${kind}" width="${width.toFixed(1)}" height="10"/></svg>` +
      `<span class="bar-value">${ms === null ? 'not measured' : milliseconds(ms)}</span></div>`;
  }).join('');
  return `<section><h2>Time per call <small>median of ${repeats} runs</small></h2><div class="bars">${body}</div></section>`;
}

function kernelRow(kernel: Kernel): string {
  const origins = kernel.provenance.map((item) => `${escapeHtml(item.ops.join(', '))} <span class="where">:${item.line}</span>`).join('<br>');
  return `<tr><td><a href="#" data-kernel="${escapeHtml(kernel.name)}">${escapeHtml(kernel.name)}</a>` +
    ` <span class="lang">${kernel.language === 'cpp' ? 'C++' : 'Triton'}</span></td>` +
    `<td class="num">${milliseconds(kernel.timeMs)}</td><td class="num">${bytes(kernel.bytes)}</td>` +
    `<td class="num">${kernel.gbps === null ? '—' : kernel.gbps.toFixed(1)}</td><td class="ops">${origins}</td></tr>`;
}

function kernels(profile: Profile): string {
  if (!profile.kernels.length) {
    return '<section><h2>Kernels</h2><p>No kernels: nothing was compiled.</p></section>';
  }
  return `<section><h2>Kernels <small>click one to read its source</small></h2><table>` +
    '<thead><tr><th>kernel</th><th class="num">time</th><th class="num">bytes moved</th><th class="num">GB/s</th><th>fused ops (source line)</th></tr></thead>' +
    `<tbody>${profile.kernels.map(kernelRow).join('')}</tbody></table></section>`;
}

function graphBreaks(profile: Profile): string {
  const items = profile.graphBreaks.map((item) =>
    `<li><a href="#" data-line="${item.line}" data-column="${item.column}">line ${item.line}</a> ${escapeHtml(item.reason)}` +
    `${item.rule ? ` <span class="rule">${escapeHtml(item.rule)}</span>` : ''}</li>`).join('');
  return `<section><h2>Graph breaks <small>${profile.graphBreaks.length}</small></h2>` +
    (items ? `<ul>${items}</ul>` : '<p>None: one graph per region.</p>') + '</section>';
}

function guards(profile: Profile): string {
  const items = profile.guards.map((guard) => `<li><code>${escapeHtml(guard)}</code></li>`).join('');
  return `<section><h2>Guards <small>${profile.guards.length}, checked on every call</small></h2>` +
    (items ? `<ul class="guards">${items}</ul>` : '<p>None.</p>') + '</section>';
}

function fallbacks(profile: Profile): string {
  const items = (profile.fallbacks ?? []).map((item) => `<li>${escapeHtml(item)}</li>`).join('');
  return items ? `<section><h2>Fallbacks <small>what FuseLens did not compile itself</small></h2><ul>${items}</ul></section>` : '';
}

function seconds(value: number | null): string | null {
  return value === null ? null : `${value.toFixed(2)} s`;
}

function facts(profile: Profile): string {
  const error = profile.maxAbsError === null ? '' : ` (max abs error ${profile.maxAbsError.toExponential(1)})`;
  const check = profile.correct ? `<span class="ok">matches eager</span>${error}` : `<span class="bad">differs from eager</span>${error}`;
  const compiled = [seconds(profile.compileSeconds.fuselens), seconds(profile.compileSeconds.torchCompile)];
  const compile = (compiled[0] ? `compiled in ${compiled[0]}` : 'not compiled') + (compiled[1] ? ` (torch.compile: ${compiled[1]})` : '');
  return `<p class="facts">${profile.device.toUpperCase()} · ${profile.backend === 'cpp' ? 'C++/OpenMP' : 'Triton'} · ` +
    `torch ${escapeHtml(profile.torchVersion)} · ${profile.ops} ops in ${profile.regions} region(s) · ${compile} · ${check}</p>`;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 16px 16px; }
h1 { font-size: 1.3em; margin: 12px 0 4px; } h1 code { font-family: var(--vscode-editor-font-family); }
h2 { font-size: 1.05em; margin: 18px 0 6px; border-bottom: 1px solid var(--vscode-panel-border); padding-bottom: 3px; }
small { color: var(--vscode-descriptionForeground); font-weight: normal; margin-left: 6px; }
.summary { font-size: 1.1em; margin: 4px 0; } .facts { color: var(--vscode-descriptionForeground); margin: 4px 0; }
.bar-row { display: grid; grid-template-columns: 110px 1fr 110px; align-items: center; gap: 8px; margin: 5px 0; }
.bar-track { background: var(--vscode-editorWidget-background); width: 100%; height: 16px; }
.bar.eager { fill: var(--vscode-charts-orange); } .bar.inductor { fill: var(--vscode-charts-blue); }
.bar.fuselens { fill: var(--vscode-charts-green); } .bar-value { text-align: right; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--vscode-panel-border); vertical-align: top; }
th { color: var(--vscode-descriptionForeground); font-weight: normal; } .num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover { background: var(--vscode-list-hoverBackground); }
a { color: var(--vscode-textLink-foreground); text-decoration: none; } a:hover { text-decoration: underline; }
.lang, .rule { color: var(--vscode-descriptionForeground); font-size: 0.9em; } .where { color: var(--vscode-descriptionForeground); }
.ops { font-family: var(--vscode-editor-font-family); font-size: 0.9em; }
.ok { color: var(--vscode-charts-green); } .bad { color: var(--vscode-errorForeground); }
ul { margin: 0; padding-left: 20px; } .guards code { font-family: var(--vscode-editor-font-family); font-size: 0.9em; }
`;

// Links post what was clicked; the extension opens the kernel or the source line.
const SCRIPT = `
const vscode = acquireVsCodeApi();
document.addEventListener('click', (event) => {
  const link = event.target.closest('a');
  if (!link) { return; }
  event.preventDefault();
  if (link.dataset.kernel) { vscode.postMessage({ type: 'openKernel', kernel: link.dataset.kernel }); }
  if (link.dataset.line) { vscode.postMessage({ type: 'openSource', line: Number(link.dataset.line), column: Number(link.dataset.column) }); }
});
`;

export function renderProfileHtml(profile: Profile, nonce: string, cspSource: string): string {
  const csp = `default-src 'none'; img-src ${cspSource}; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';`;
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${STYLE}</style><title>FuseLens profile</title></head><body>
<h1>FuseLens profile of <code>${escapeHtml(profile.function)}</code></h1>
<p class="summary">${escapeHtml(profile.summary)}</p>${facts(profile)}
${bars(profile)}${kernels(profile)}${fallbacks(profile)}${graphBreaks(profile)}${guards(profile)}
<script nonce="${nonce}">${SCRIPT}</script></body></html>`;
}
