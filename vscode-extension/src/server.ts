// The language server's life: which Python runs it, checking that it can, starting the client,
// restarting (coalesced) when the interpreter changes, telling it about workspace trust.
import * as vscode from 'vscode';
import {
  ConfigurationParams, Executable, LanguageClient, LanguageClientOptions, MessageType,
  ShowMessageNotification, TransportKind,
} from 'vscode-languageclient/node';
import {
  PythonEnvironment, ProbeError, missingServerMessage, missingTorchMessage, probeDevice, probeVersions,
} from './environment';
import { Interpreter, resolveInterpreter } from './interpreter';
import { Notifier } from './notifier';
import { SetWorkspaceTrust } from './protocol';
import { SECTION, readExtensionSettings, serverSettings } from './settings';
import { EnvironmentStatus } from './statusItem';

/** What the rest of the extension does with the server's traffic (see RunCommands). */
export interface ClientHooks {
  /** Runs a command the server lists (a code lens click) on the client's side; undefined: not ours. */
  serverCommand(command: string, args: unknown[]): Promise<unknown> | undefined;
  /** The editor asked for a document's code lenses: the server may have profiled it again (on save). */
  codeLensesRequested(uri: vscode.Uri): void;
}

const RESTART_DELAY_MS = 200;

function launchKey(interpreter: Interpreter, serverArgs: string[]): string {
  return JSON.stringify([interpreter.command, serverArgs]);
}

export class FuseLensServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** The interpreter and fuselens.args the server was last started with. */
  private launched: string | undefined;
  private environment: PythonEnvironment | undefined;
  /** The start or restart in progress (never rejects). */
  private current: Promise<void> = Promise.resolve();
  /** A restart asked for but not begun yet: later requests join it. */
  private queued: Promise<void> | undefined;

  constructor(private readonly extensionPath: string, private readonly log: vscode.LogOutputChannel,
              private readonly status: EnvironmentStatus, private readonly notifier: Notifier,
              private readonly hooks: ClientHooks) {}

  /** The running client, or undefined while the server is stopped or could not start. */
  get languageClient(): LanguageClient | undefined {
    return this.client?.isRunning() ? this.client : undefined;
  }

  /** Resolves when the current start or restart has finished (successfully or not). */
  get ready(): Promise<void> {
    return this.queued ?? this.current;
  }

  start(): Promise<void> {
    this.current = this.current.then(() => this.startNow()).catch((error) => this.log.error(`start: ${error}`));
    return this.current;
  }

  /** Restarts soon; requests that arrive before that restart begins share it. */
  restart(reason: string): Promise<void> {
    this.log.info(`restart requested: ${reason}`);
    if (!this.queued) {
      const queued = this.current
        .then(() => new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS)))
        .then(async () => {
          this.queued = undefined;
          await this.stopNow();
          await this.startNow();
        })
        .catch((error) => this.log.error(`restart: ${error}`));
      this.queued = queued;
      this.current = queued;
    }
    return this.queued;
  }

  /**
   * Restarts when the server would now be started differently (the interpreter or fuselens.args
   * changed, or trust made another interpreter count); true when it restarted.
   */
  async refresh(reason: string): Promise<boolean> {
    if (this.queued) { // a restart that has not begun yet reads the settings then
      await this.queued;
      return true;
    }
    await this.current;
    const settings = readExtensionSettings();
    const interpreter = await resolveInterpreter(settings.interpreter, vscode.workspace.isTrusted, undefined, this.log);
    if (launchKey(interpreter, settings.serverArgs) === this.launched) {
      return false;
    }
    await this.restart(reason);
    return true;
  }

  /** The user trusted the workspace: a restarted server starts trusted, a running one is told. */
  async trustGranted(): Promise<void> {
    if (!(await this.refresh('the workspace is trusted now'))) {
      await this.languageClient?.sendNotification(SetWorkspaceTrust, { trusted: true });
    }
  }

  async stop(): Promise<void> {
    await this.current;
    await this.stopNow();
  }

  dispose(): void {
    void this.stop();
  }

  private async startNow(): Promise<void> {
    const settings = readExtensionSettings();
    const trusted = vscode.workspace.isTrusted;
    const interpreter = await resolveInterpreter(settings.interpreter, trusted, undefined, this.log);
    this.launched = launchKey(interpreter, settings.serverArgs);
    this.status.starting(interpreter);
    this.log.info(`starting the server with ${interpreter.command.join(' ')} (${interpreter.origin}); workspace trusted: ${trusted}`);
    const environment = await this.checkEnvironment(interpreter);
    if (!environment) {
      return;
    }
    const client = this.createClient(interpreter, settings.serverArgs, trusted);
    this.client = client;
    try {
      await client.start();
      this.log.info(`server started (FuseLens ${environment.fuselens}, torch ${environment.torch ?? 'not installed'})`);
    } catch (error) {
      this.status.problem('FuseLens server failed', String(error));
      void this.notifier.notify(MessageType.Error, `The FuseLens server did not start: ${error}`, 'Show Output')
        .then((action) => action && this.log.show());
      return;
    }
    if (environment.torch !== null) {
      probeDevice(interpreter, this.extensionPath).then(
        (device) => this.environment === environment && this.status.environment(environment, device),
        (error) => this.log.warn(`could not ask torch for CUDA: ${error}`));
    }
  }

  private async checkEnvironment(interpreter: Interpreter): Promise<PythonEnvironment | undefined> {
    let environment: PythonEnvironment;
    try {
      environment = await probeVersions(interpreter, this.extensionPath);
    } catch (error) {
      const missing = error instanceof ProbeError && error.missingPython;
      const reason = error instanceof Error ? error.message : String(error);
      this.status.problem(missing ? 'Python not found' : 'Python failed', reason);
      const message = `FuseLens ${reason}. ` +
        'Set fuselens.interpreter to a Python that has FuseLens installed, or select an interpreter in the Python extension.';
      void this.offerSettings(message);
      return undefined;
    }
    this.environment = environment;
    this.status.environment(environment);
    const missingServer = missingServerMessage(environment, interpreter);
    if (missingServer) {
      this.status.problem('FuseLens not installed', missingServer);
      void this.offerSettings(missingServer);
      return undefined;
    }
    const missingTorch = missingTorchMessage(environment);
    if (missingTorch) {
      void this.notifier.notify(MessageType.Warning, missingTorch);
    }
    return environment;
  }

  private async offerSettings(message: string): Promise<void> {
    const action = await this.notifier.notify(MessageType.Error, message, 'Open Settings', 'Show Output');
    if (action === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'fuselens.interpreter');
    } else if (action === 'Show Output') {
      this.log.show();
    }
  }

  private createClient(interpreter: Interpreter, serverArgs: string[], trusted: boolean): LanguageClient {
    const [command, ...pythonArgs] = interpreter.command;
    // `python -m fuselens.server` is `fuselens serve`; unlike the `fuselens serve` subcommand it takes
    // options (--stdio, which the client appends, and the user's fuselens.args).
    // The working directory is the extension's, not the workspace's: `python -m` imports from the
    // working directory first, and a workspace could ship its own `fuselens` package.
    const executable: Executable = {
      command, args: [...pythonArgs, '-m', 'fuselens.server', ...serverArgs],
      transport: TransportKind.stdio, options: { cwd: this.extensionPath },
    };
    const options: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file', language: 'python' }, { scheme: 'untitled', language: 'python' }],
      outputChannel: this.log,
      initializationOptions: { settings: serverSettings(interpreter.command), trusted },
      synchronize: { configurationSection: SECTION },
      middleware: {
        workspace: {
          configuration: async (params: ConfigurationParams, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, index) => item.section === SECTION
              ? serverSettings(interpreter.command, item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)
              : answers[index]);
          },
        },
        executeCommand: (name, args, next) => this.hooks.serverCommand(name, args) ?? next(name, args),
        provideCodeLenses: (document, token, next) => {
          this.hooks.codeLensesRequested(document.uri);
          return next(document, token);
        },
      },
    };
    const client = new LanguageClient('fuselens', 'FuseLens', { run: executable, debug: executable }, options);
    // Replaces the client's own window/showMessage handler: fuselens.showNotifications filters them.
    client.onNotification(ShowMessageNotification.type, (params) => this.notifier.fromServer(params));
    return client;
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client?.isRunning()) {
      await client.stop().catch((error) => this.log.warn(`stopping the server: ${error}`));
    }
  }
}
