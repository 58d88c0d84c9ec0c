// The Python environment: the status item, a missing FuseLens, restarting.
import * as assert from 'assert';
import * as vscode from 'vscode';
import { fuselens, fuselensDiagnostics, openSample, waitFor } from '../helpers';

suite('environment (trusted workspace)', () => {
  test('the language status shows the torch version and the CPU/C++ backend', async () => {
    const api = await fuselens();
    const status = await waitFor('the backend in the status item', () => / · (CPU\/C\+\+|CUDA\/Triton)$/.test(api.status().text) && api.status());
    assert.match(status.text, /^torch \d+\.\d+/);
    assert.match(status.detail ?? '', /^FuseLens \S+ · Python 3\.\d+/);
  });

  test('a missing Python or FuseLens is reported, and fixing the setting restarts the server', async () => {
    const api = await fuselens();
    const settings = vscode.workspace.getConfiguration('fuselens');
    await settings.update('interpreter', ['/nonexistent/bin/python'], vscode.ConfigurationTarget.Workspace);
    await waitFor('the status to say Python is missing', () => api.status().text === 'Python not found');
    assert.match(api.status().detail ?? '', /could not run `\/nonexistent\/bin\/python` \(the fuselens.interpreter setting\): it was not found/);
    // `python3 -S` skips site-packages: a Python where FuseLens is not installed.
    await settings.update('interpreter', ['python3', '-S'], vscode.ConfigurationTarget.Workspace);
    await waitFor('the status to say FuseLens is missing', () => api.status().text === 'FuseLens not installed');
    await api.ready();
    assert.strictEqual(api.languageClient(), undefined, 'no server runs without FuseLens');
    assert.match(api.status().detail ?? '', /FuseLens is not installed in .*python.* -m pip install fuselens/);
    await settings.update('interpreter', undefined, vscode.ConfigurationTarget.Workspace);
    await waitFor('the server to run again', async () => {
      await api.ready();
      return api.languageClient();
    });
  });

  test('FuseLens: Restart Server starts a new server and diagnostics come back', async () => {
    const api = await fuselens();
    const before = api.languageClient();
    assert.ok(before, 'the server runs');
    await vscode.commands.executeCommand('fuselens.restartServer');
    await api.ready();
    const after = api.languageClient();
    assert.ok(after && after !== before, 'a new client runs');
    const editor = await openSample('model.py');
    await editor.edit((edit) => edit.insert(new vscode.Position(editor.document.lineCount, 0), '\n'));
    await waitFor('diagnostics from the new server', () => fuselensDiagnostics(editor.document.uri).length > 0);
  });
});
