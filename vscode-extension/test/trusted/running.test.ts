// Running code through the server's worker: Dynamo, compile and profile, kernels, the transformed program.
// Nothing here is faked: the real server runs real torch, Dynamo and the FuseLens compiler.
import * as assert from 'assert';
import * as vscode from 'vscode';
import type { Profile, TransformedProgram } from '../../src/protocol';
import { assertDone, fuselens, fuselensDiagnostics, openSample, sampleUri, waitFor } from '../helpers';

const KERNEL_SCHEME = 'fuselens-kernel';

function visibleKernelEditors(): vscode.TextEditor[] {
  return vscode.window.visibleTextEditors.filter((editor) => editor.document.uri.scheme === KERNEL_SCHEME);
}

function profilePanelTab(): vscode.Tab | undefined {
  return vscode.window.tabGroups.all.flatMap((group) => group.tabs)
    .find((tab) => tab.input instanceof vscode.TabInputWebview && tab.input.viewType.endsWith('fuselens.profile'));
}

suite('running code (trusted workspace)', () => {
  let profile: Profile | undefined;

  suiteSetup(async () => {
    await fuselens();
    await openSample('model.py');
  });

  test('Explain with Dynamo shows its graph break as a diagnostic', async () => {
    const uri = sampleUri('model.py');
    const explanation = assertDone<{ graphBreakCount: number }>(
      await vscode.commands.executeCommand('fuselens.explainDynamo', uri.toString(), 'Gate.forward'), 'Explain with Dynamo');
    assert.ok(explanation.graphBreakCount >= 1, `Dynamo breaks on the data-dependent if (got ${explanation.graphBreakCount})`);
    const dynamo = await waitFor('a Dynamo diagnostic', () => fuselensDiagnostics(uri, 'dynamo')[0]);
    const document = await vscode.workspace.openTextDocument(uri);
    assert.strictEqual(document.lineAt(dynamo.range.start.line).text.trim(), 'if h.sum() > 0:');
  });

  test('Compile and profile produces a kernel document and the profile panel', async () => {
    const uri = sampleUri('model.py');
    // As the code lens does: the server's command with [uri, function].
    profile = assertDone<Profile>(await vscode.commands.executeCommand('fuselens.compileAndProfile', uri.toString(), 'rms_norm'),
                                  'Compile and profile');
    assert.ok(profile.kernels.length >= 1, 'at least one kernel');
    assert.ok(profile.correct, `FuseLens matches eager (max abs error ${profile.maxAbsError})`);
    const kernel = profile.kernels[0];
    const editor = await waitFor('the kernel document beside the source', () => visibleKernelEditors()[0]);
    const extension = kernel.language === 'cpp' ? '.cpp' : '.py';
    assert.ok(editor.document.uri.path.endsWith(`/rms_norm/${kernel.name}${extension}`), editor.document.uri.toString());
    assert.strictEqual(editor.document.languageId, kernel.language === 'cpp' ? 'cpp' : 'python');
    assert.strictEqual(editor.document.getText(), kernel.source);
    assert.notStrictEqual(editor.viewColumn, vscode.ViewColumn.One, 'opened beside the source');
    assert.ok(profilePanelTab(), 'the profile panel is open');
  });

  test('provenance comments in a kernel link back to the source lines', async () => {
    assert.ok(profile, 'needs the profile of the previous test');
    const editor = visibleKernelEditors()[0];
    assert.ok(editor, 'the kernel document is open');
    const links = await vscode.commands.executeCommand<vscode.DocumentLink[]>('vscode.executeLinkProvider', editor.document.uri);
    const targets = links.map((link) => link.target).filter((target): target is vscode.Uri => target !== undefined);
    const model = sampleUri('model.py').fsPath;
    const lines = targets.filter((target) => target.fsPath === model).map((target) => Number(target.fragment.replace(/^L/, '')));
    assert.ok(lines.length >= 1, `links to model.py (got ${targets.map(String).join(', ')})`);
    for (const line of lines) {
      assert.ok(line >= 8 && line <= 9, `a link into rms_norm's body (line ${line})`);
    }
    const expected = profile.kernels[0].provenance.map((item) => item.line);
    assert.ok(expected.every((line) => lines.includes(line)), `every provenance line is linked (${expected} in ${lines})`);
  });

  test('the "→ kernel" code lens on the source opens that kernel', async () => {
    assert.ok(profile, 'needs the profile of the previous test');
    const uri = sampleUri('model.py');
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 1000);
    const lens = lenses.find((item) => item.command?.command === 'fuselens.showKernel');
    assert.ok(lens?.command, `a fuselens.showKernel lens (lenses: ${lenses.map((item) => item.command?.title).join(' | ')})`);
    const [lensUri, lensFunction, kernelName] = lens.command.arguments ?? [];
    assert.deepStrictEqual([lensUri, lensFunction], [uri.toString(), 'rms_norm']);
    await vscode.commands.executeCommand('workbench.action.closeEditorsInOtherGroups');
    const editor = await vscode.commands.executeCommand<vscode.TextEditor>(lens.command.command, ...lens.command.arguments!);
    assert.ok(editor.document.uri.path.includes(`/rms_norm/${kernelName}.`), editor.document.uri.toString());
    assert.ok(visibleKernelEditors().length === 1, 'the kernel is visible');
  });

  test('Show Transformed Program at the cursor opens a Python document beside the source', async () => {
    const source = await openSample('model.py');
    const body = new vscode.Position(8, 8); // in rms_norm's return statement
    source.selection = new vscode.Selection(body, body);
    const program = assertDone<TransformedProgram>(
      await vscode.commands.executeCommand('fuselens.showTransformedProgramAtCursor'), 'Show transformed program');
    assert.strictEqual(program.function, 'rms_norm');
    const editor = await waitFor('the transformed program beside the source',
      () => vscode.window.visibleTextEditors.find((item) => item.document.uri.path.endsWith('/rms_norm/transformed.py')));
    assert.strictEqual(editor.document.uri.scheme, KERNEL_SCHEME);
    assert.strictEqual(editor.document.languageId, 'python');
    assert.ok(editor.document.getText().endsWith(program.source), 'the document holds the program');
  });
});
