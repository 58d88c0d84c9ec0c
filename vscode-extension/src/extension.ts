// Entry point: wires the server, the run commands, the kernel views and the profile panel together.
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import { onDidChangePythonEnvironment } from './interpreter';
import { KERNEL_SCHEME, KernelDocuments } from './kernelDocuments';
import { Notifier } from './notifier';
import { ResultStore } from './profiles';
import { ProfilePanel } from './profilePanel';
import { RunCommands } from './runCommands';
import { RESTART_SETTINGS, SECTION, readExtensionSettings } from './settings';
import { FuseLensServer } from './server';
import { EnvironmentStatus } from './statusItem';

/** What the extension exports, for other extensions and for its own tests. */
export interface FuseLensApi {
  /** Resolves when the server has started (or failed to). */
  ready(): Promise<void>;
  languageClient(): LanguageClient | undefined;
  status(): { text: string; detail: string | undefined };
}

let server: FuseLensServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<FuseLensApi> {
  const log = vscode.window.createOutputChannel('FuseLens', { log: true });
  const status = new EnvironmentStatus();
  const notifier = new Notifier(() => readExtensionSettings().showNotifications, log);
  const store = new ResultStore();
  const panel = new ProfilePanel(store, (ref, kernel, column) => runs.showKernel(ref, kernel, column));
  const runs: RunCommands = new RunCommands(() => fuselens, store, panel, notifier, log);
  const fuselens = new FuseLensServer(context.extensionPath, log, status, notifier, {
    serverCommand: (command, args) => runs.serverCommand(command, args),
    codeLensesRequested: (uri) => void runs.syncProfiles(uri),
  });
  server = fuselens;
  const kernels = new KernelDocuments(store, (ref, kernel) => runs.kernelSource(ref, kernel));

  context.subscriptions.push(
    log, status, store, panel, kernels, fuselens,
    vscode.workspace.registerTextDocumentContentProvider(KERNEL_SCHEME, kernels),
    vscode.languages.registerDocumentLinkProvider({ scheme: KERNEL_SCHEME }, kernels),
    ...runs.register(),
    vscode.commands.registerCommand('fuselens.restartServer', () => fuselens.restart('FuseLens: Restart Server')),
    vscode.workspace.onDidChangeConfiguration((event) => {
      const changed = RESTART_SETTINGS.find((setting) => event.affectsConfiguration(setting));
      if (changed) {
        void fuselens.refresh(`${changed} changed`);
      }
      // Other fuselens settings reach the running server through workspace/didChangeConfiguration.
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => fuselens.trustGranted()),
  );
  // Asking the Python extension activates it: not before FuseLens has started.
  void onDidChangePythonEnvironment(() => fuselens.refresh('the Python extension selected another environment'))
    .then((subscription) => context.subscriptions.push(subscription));
  void fuselens.start();
  log.info(`FuseLens ${context.extension.packageJSON.version} activated (settings section "${SECTION}")`);
  return {
    ready: () => fuselens.ready,
    languageClient: () => fuselens.languageClient,
    status: () => ({ text: status.text, detail: status.detail }),
  };
}

export function deactivate(): Promise<void> | undefined {
  return server?.stop();
}
