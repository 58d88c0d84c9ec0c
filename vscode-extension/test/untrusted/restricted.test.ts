// Restricted mode: static analysis works, running code is refused by the extension and by the server,
// and the workspace cannot choose the interpreter.
import * as assert from 'assert';
import * as vscode from 'vscode';
import { fuselens, fuselensDiagnostics, openSample, sampleUri, waitFor } from '../helpers';

suite('untrusted workspace', () => {
  test('the workspace is not trusted', () => {
    assert.strictEqual(vscode.workspace.isTrusted, false);
  });

  test('the workspace interpreter setting is ignored and the server starts', async () => {
    // This workspace's .vscode/settings.json sets fuselens.interpreter to a python that does not exist.
    const settings = await vscode.workspace.fs.readFile(sampleUri('.vscode/settings.json'));
    assert.deepStrictEqual(JSON.parse(Buffer.from(settings).toString())['fuselens.interpreter'], ['/nonexistent/bin/python']);
    assert.deepStrictEqual(vscode.workspace.getConfiguration('fuselens').get('interpreter'), [], 'VS Code withholds it');
    const api = await fuselens();
    assert.ok(api.languageClient(), `the server runs (status: ${api.status().text}: ${api.status().detail})`);
  });

  test('diagnostics still appear', async () => {
    const editor = await openSample('model.py');
    await waitFor('FuseLens diagnostics on model.py', () => fuselensDiagnostics(editor.document.uri).length >= 3);
  });

  test('Compile and profile refuses to run code', async () => {
    await fuselens();
    const outcome = await vscode.commands.executeCommand<{ status: string; message: string }>(
      'fuselens.compileAndProfile', sampleUri('model.py').toString(), 'rms_norm');
    assert.strictEqual(outcome?.status, 'refused');
    assert.match(outcome.message, /only runs in a trusted workspace/);
    await openSample('model.py');
    const palette = await vscode.commands.executeCommand<{ status: string }>('fuselens.explainDynamoAtCursor');
    assert.strictEqual(palette?.status, 'refused', 'the palette command refuses too, before asking for a function');
  });

  test('the server refuses too: it was told the workspace is untrusted', async () => {
    const client = (await fuselens()).languageClient();
    assert.ok(client);
    await assert.rejects(client.sendRequest('fuselens/profile', { uri: sampleUri('model.py').toString(), function: 'rms_norm', run: true }),
                         (error: { data?: { kind?: string } }) => error.data?.kind === 'untrusted');
  });
});
