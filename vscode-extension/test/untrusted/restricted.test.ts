// Restricted mode: static analysis works, running code is refused by the extension and by the server,
// and the workspace cannot choose the interpreter.
import * as assert from 'assert';
import * as vscode from 'vscode';
import { fuselens, fuselensDiagnostics, openSample, sampleUri, waitFor } from '../helpers';

suite('untrusted workspace', () => {
  test('the workspace is not trusted', () => {
    assert.strictEqual(vscode.workspace.isTrusted, false);
  });

  test('the workspace\'s interpreter and execution settings are withheld, and the server starts', async () => {
    const file = await vscode.workspace.fs.readFile(sampleUri('.vscode/settings.json'));
    const workspace = JSON.parse(Buffer.from(file).toString());
    assert.deepStrictEqual([workspace['fuselens.interpreter'], workspace['fuselens.worker.timeoutS']], [['python3'], 30]);
    const settings = vscode.workspace.getConfiguration('fuselens');
    assert.deepStrictEqual([settings.get('interpreter'), settings.get('worker.timeoutS')], [[], 120], 'VS Code withholds them');
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

  test('once the user trusts the workspace, the server accepts runs without restarting', async () => {
    const api = await fuselens();
    const client = api.languageClient();
    assert.ok(client);
    console.log('FUSELENS-E2E grant-trust'); // the test driver clicks through "Manage Workspace Trust"
    await waitFor('the user to trust the workspace', () => vscode.workspace.isTrusted);
    assert.deepStrictEqual(vscode.workspace.getConfiguration('fuselens').get('interpreter'), ['python3'], 'the workspace value counts now');
    await api.ready();
    assert.strictEqual(api.languageClient(), client, 'the same interpreter: the server was told, not restarted');
    // A file that does not exist: the server gets past its trust check, then cannot read the file.
    const missing = vscode.Uri.joinPath(sampleUri('model.py'), '..', 'missing.py').toString();
    await assert.rejects(client.sendRequest('fuselens/transformedProgram', { uri: missing, function: 'f' }),
                         (error: { data?: { kind?: string } }) => error.data?.kind === 'not-found');
  });
});
