// What the extension tests share: the extension's API, the sample workspace, polling.
import * as assert from 'assert';
import * as vscode from 'vscode';
import type { FuseLensApi } from '../src/extension';

export async function fuselens(): Promise<FuseLensApi> {
  const extension = vscode.extensions.getExtension<FuseLensApi>('fuselens.fuselens');
  assert.ok(extension, 'the FuseLens extension is not loaded');
  const api = await extension.activate();
  await api.ready();
  return api;
}

export function sampleUri(name: string): vscode.Uri {
  const folder = vscode.workspace.workspaceFolders?.[0];
  assert.ok(folder, 'the tests run in the sample workspace');
  return vscode.Uri.joinPath(folder.uri, name);
}

export async function openSample(name: string): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument(sampleUri(name));
  return vscode.window.showTextDocument(document, vscode.ViewColumn.One);
}

/** Polls until `probe` returns a truthy value; fails with `what` after `timeoutMs`. */
type Maybe<T> = T | undefined | null | false;

export async function waitFor<T>(what: string, probe: () => Maybe<T> | Promise<Maybe<T>>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) {
      return value;
    }
    if (Date.now() > end) {
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export function fuselensDiagnostics(uri: vscode.Uri, source = 'fuselens'): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((diagnostic) => diagnostic.source === source);
}

export function codeOf(diagnostic: vscode.Diagnostic): string {
  const code = diagnostic.code;
  return String(typeof code === 'object' ? code.value : code);
}

/** The outcome a run command answers with (see RunOutcome in src/runCommands.ts). */
export function assertDone<T>(outcome: unknown, what: string): T {
  const value = outcome as { status: string; result?: T; message?: string } | undefined;
  assert.ok(value, `${what} answered nothing`);
  assert.strictEqual(value.status, 'done', `${what}: ${value.status}: ${value.message}`);
  return value.result as T;
}
