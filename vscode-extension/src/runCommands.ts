// The commands that run the user's code (always in the server's worker process), and the views of
// their results. They refuse in untrusted workspaces, show cancellable progress (cancelling cancels
// the LSP request, which kills the worker) and answer with a RunOutcome.
import { randomUUID } from 'crypto';
import * as vscode from 'vscode';
import { LSPErrorCodes, MessageType, ResponseError, WorkDoneProgress } from 'vscode-languageclient/node';
import { functionAtCursor } from './functionAtCursor';
import { kernelUri, programUri } from './kernelDocuments';
import { Notifier } from './notifier';
import { ResultStore } from './profiles';
import { ProfilePanel } from './profilePanel';
import {
  DynamoExplanation, FailureData, FunctionRef, Kernel, KernelSource, Profile, Requests, ServerCommands, TransformedProgram,
} from './protocol';
import { FuseLensServer } from './server';

export type RunOutcome<T> =
  | { status: 'done'; result: T }
  | { status: 'refused' | 'failed' | 'cancelled'; message: string; kind?: string };

export class RunCommands {
  constructor(private readonly server: () => FuseLensServer, private readonly store: ResultStore,
              private readonly panel: ProfilePanel, private readonly notifier: Notifier,
              private readonly log: vscode.LogOutputChannel) {}

  register(): vscode.Disposable[] {
    const atCursor = (action: string, run: (ref: FunctionRef) => Promise<unknown>, runsCode = true) => async () => {
      const refused = runsCode ? this.refuseUntrusted(action) : undefined;
      if (refused) {
        return refused;
      }
      const ref = await functionAtCursor(vscode.window.activeTextEditor, action);
      return ref ? run(ref) : undefined;
    };
    return [
      vscode.commands.registerCommand('fuselens.compileAndProfileAtCursor', atCursor('Compile and profile', (ref) => this.compileAndProfile(ref))),
      vscode.commands.registerCommand('fuselens.explainDynamoAtCursor', atCursor('Explain with Dynamo', (ref) => this.explainDynamo(ref))),
      vscode.commands.registerCommand('fuselens.showTransformedProgramAtCursor',
                                      atCursor('Show transformed program', (ref) => this.showTransformedProgram(ref))),
      vscode.commands.registerCommand('fuselens.showKernels', atCursor('Show kernels', (ref) => this.pickKernel(ref), false)),
    ];
  }

  /**
   * The server's commands (its code lenses send them with [uri, function] or, for "→ kernel0",
   * [uri, function, kernel]), run here: with progress, then showing the result.
   */
  serverCommand(command: string, args: unknown[]): Promise<unknown> | undefined {
    const [uri, name, kernel] = args;
    if (typeof uri !== 'string' || typeof name !== 'string') {
      return undefined;
    }
    const ref = { uri, function: name };
    switch (command) {
      case ServerCommands.compileAndProfile: return this.compileAndProfile(ref);
      case ServerCommands.explainDynamo: return this.explainDynamo(ref);
      case ServerCommands.showTransformedProgram: return this.showTransformedProgram(ref);
      case ServerCommands.showKernel: return typeof kernel === 'string' ? this.showKernel(ref, kernel) : undefined;
      default: return undefined;
    }
  }

  async compileAndProfile(ref: FunctionRef): Promise<RunOutcome<Profile>> {
    const outcome = await this.run<Profile>('Compile and profile', ref, Requests.profile, { run: true });
    if (outcome.status === 'done') {
      const profile = outcome.result;
      this.store.setProfile(ref, profile);
      this.panel.show(ref);
      if (profile.kernels.length) {
        await this.openView(kernelUri(ref, profile.kernels[0].name, profile.kernels[0].language));
      }
    }
    return outcome;
  }

  async explainDynamo(ref: FunctionRef): Promise<RunOutcome<DynamoExplanation>> {
    // The server turns Dynamo's graph breaks into diagnostics (source "dynamo") and says how it went.
    return this.run<DynamoExplanation>('Explain with Dynamo', ref, Requests.explainDynamo, {});
  }

  async showTransformedProgram(ref: FunctionRef): Promise<RunOutcome<TransformedProgram>> {
    const outcome = await this.run<TransformedProgram>('Show transformed program', ref, Requests.transformedProgram, {});
    if (outcome.status === 'done') {
      this.store.setProgram(ref, outcome.result);
      await this.openView(programUri(ref));
    }
    return outcome;
  }

  /** Opens one kernel of the function's last profile (the "→ kernelN" lens, the panel's kernel links). */
  async showKernel(ref: FunctionRef, kernel: string, column = vscode.ViewColumn.Beside): Promise<vscode.TextEditor | undefined> {
    const known = this.store.profile(ref)?.kernels.find((item) => item.name === kernel);
    const language = known?.language ?? (await this.kernelSource(ref, kernel).catch((error) => {
      void this.notifier.answer(MessageType.Error, `FuseLens: ${error instanceof Error ? error.message : error}`);
      return undefined;
    }))?.language;
    return language ? this.openView(kernelUri(ref, kernel, language), column) : undefined;
  }

  /** A kernel's source from the server's last profile of the function (for views opened before this session's profile). */
  kernelSource(ref: FunctionRef, kernel: string): Promise<KernelSource> {
    const client = this.server().languageClient;
    if (!client) {
      return Promise.reject(new Error('the FuseLens server is not running'));
    }
    return client.sendRequest<KernelSource>(Requests.kernelSource, { ...ref, kernel });
  }

  /**
   * Takes the server's latest profiles of a document's functions (with fuselens.execution.onSave the
   * server profiles again on save, then asks for code lenses again), so open views follow.
   */
  async syncProfiles(uri: vscode.Uri): Promise<void> {
    const client = this.server().languageClient;
    for (const ref of client ? this.store.profiledIn(uri.toString()) : []) {
      const latest = await client!.sendRequest<Profile | null>(Requests.profile, ref).catch(() => null);
      if (latest && JSON.stringify(latest) !== JSON.stringify(this.store.profile(ref))) {
        this.store.setProfile(ref, latest);
      }
    }
  }

  private async pickKernel(ref: FunctionRef): Promise<vscode.TextEditor | undefined> {
    let kernels: Kernel[] | undefined = this.store.profile(ref)?.kernels;
    if (!kernels) {
      try {
        kernels = await this.server().languageClient?.sendRequest<Kernel[]>(Requests.kernels, ref);
      } catch (error) {
        void this.notifier.answer(MessageType.Error, `FuseLens: ${error instanceof Error ? error.message : error}`);
        return undefined;
      }
    }
    if (!kernels?.length) {
      void this.notifier.answer(MessageType.Info, `FuseLens: ${ref.function} has no kernels yet: run "Compile and profile" on it.`);
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(kernels.map((kernel) => ({
      label: kernel.name,
      description: kernel.language === 'cpp' ? 'C++' : 'Triton',
      detail: kernel.provenance.map((item) => `${item.ops.join(', ')} (line ${item.line})`).join(' · '),
    })), { title: `FuseLens: kernels of ${ref.function}` });
    return picked ? this.showKernel(ref, picked.label) : undefined;
  }

  private openView(uri: vscode.Uri, column = vscode.ViewColumn.Beside): Thenable<vscode.TextEditor> {
    return vscode.window.showTextDocument(uri, { viewColumn: column, preserveFocus: true, preview: false });
  }

  /** The refusal to run code in an untrusted workspace (shown to the user), or undefined when trusted. */
  private refuseUntrusted(title: string): RunOutcome<never> | undefined {
    if (vscode.workspace.isTrusted) {
      return undefined;
    }
    const message = `FuseLens: ${title} runs your code, so it only runs in a trusted workspace. Trust this workspace to use it.`;
    void this.notifier.answer(MessageType.Error, message, 'Manage Workspace Trust').then((action) =>
      action && vscode.commands.executeCommand('workbench.trust.manage'));
    return { status: 'refused', message, kind: 'untrusted' };
  }

  private async run<T>(title: string, ref: FunctionRef, method: string, params: object): Promise<RunOutcome<T>> {
    const refused = this.refuseUntrusted(title);
    if (refused) {
      return refused;
    }
    const client = this.server().languageClient;
    if (!client) {
      const message = `FuseLens: ${title} needs the FuseLens server, which is not running (see the FuseLens output).`;
      void this.notifier.answer(MessageType.Error, message);
      return { status: 'failed', message, kind: 'no-server' };
    }
    const token = `fuselens-${randomUUID()}`;
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `FuseLens: ${title} · ${ref.function}`, cancellable: true },
        async (progress, cancellation) => {
          const stages = client.onProgress(WorkDoneProgress.type, token, (value) => {
            if (value.kind !== 'end' && value.message) {
              progress.report({ message: value.message });
            }
          });
          try {
            return await client.sendRequest<T>(method, { ...ref, ...params, workDoneToken: token }, cancellation);
          } finally {
            stages.dispose();
          }
        });
      return { status: 'done', result };
    } catch (error) {
      return this.failed(title, ref, error);
    }
  }

  private failed(title: string, ref: FunctionRef, error: unknown): RunOutcome<never> {
    if (error instanceof ResponseError && error.code === LSPErrorCodes.RequestCancelled) {
      const message = `FuseLens: ${title} of ${ref.function} was cancelled.`;
      this.log.info(message);
      return { status: 'cancelled', message };
    }
    const data = error instanceof ResponseError ? (error.data as FailureData | undefined) : undefined;
    const message = error instanceof Error ? error.message : String(error);
    if (data?.detail) {
      this.log.error(`${message}\n${data.detail}`);
    }
    void this.notifier.answer(MessageType.Error, message, 'Show Output').then((action) => action && this.log.show());
    return { status: 'failed', message, kind: data?.kind };
  }
}
