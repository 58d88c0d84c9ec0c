// Static analysis in the editor: diagnostics as the file opens, a quick fix that applies.
import * as assert from 'assert';
import * as vscode from 'vscode';
import { codeOf, fuselens, fuselensDiagnostics, openSample, sampleUri, waitFor } from '../helpers';

suite('editing (trusted workspace)', () => {
  suiteSetup(async () => {
    await fuselens();
  });

  test('diagnostics appear for the sample file', async () => {
    const editor = await openSample('model.py');
    const diagnostics = await waitFor('FuseLens diagnostics on model.py',
      () => fuselensDiagnostics(editor.document.uri).length >= 3 && fuselensDiagnostics(editor.document.uri));
    const found = diagnostics.map((d) => `${codeOf(d)}@${d.range.start.line + 1}`).sort();
    assert.deepStrictEqual(found, ['FL101@33', 'FL102@19', 'FL110@18']);
    const print = diagnostics.find((d) => codeOf(d) === 'FL110');
    assert.strictEqual(print?.severity, vscode.DiagnosticSeverity.Warning);
    assert.match(print?.message ?? '', /print\(\) splits the graph/);
  });

  test('a quick fix applies and its warning goes away', async () => {
    const uri = sampleUri('model.py');
    const editor = await openSample('model.py');
    const print = fuselensDiagnostics(uri).find((d) => codeOf(d) === 'FL110');
    assert.ok(print, 'the print() warning is there');
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
      'vscode.executeCodeActionProvider', uri, print.range, vscode.CodeActionKind.QuickFix.value);
    const titles = actions.map((action) => action.title);
    const fix = actions.find((action) => action.title === 'Skip this print while compiling');
    assert.ok(fix?.edit, `the analyzer's fix is offered (got: ${titles.join(' | ')})`);
    assert.ok(titles.includes('Ignore FL110 on this line'), `"ignore on this line" is offered (got: ${titles.join(' | ')})`);
    assert.ok(await vscode.workspace.applyEdit(fix.edit));
    assert.match(editor.document.lineAt(17).text, /^ {4}if not torch\.compiler\.is_compiling\(\):$/);
    assert.match(editor.document.lineAt(18).text, /^ {8}print\("gelu_scale", x\.shape\)$/);
    await waitFor('the FL110 warning to go away after the fix',
      () => !fuselensDiagnostics(uri).some((d) => codeOf(d) === 'FL110'));
    assert.ok(fuselensDiagnostics(uri).some((d) => codeOf(d) === 'FL102'), 'the other findings stay');
    await editor.document.save();
  });
});
