// The profile panel: one webview showing the latest profile; its links open kernels and source lines.
import { randomBytes } from 'crypto';
import * as vscode from 'vscode';
import { renderProfileHtml } from './profileHtml';
import { ResultStore, functionKey } from './profiles';
import { FunctionRef } from './protocol';

export const PROFILE_VIEW_TYPE = 'fuselens.profile';

type PanelMessage = { type: 'openKernel'; kernel: string } | { type: 'openSource'; line: number; column: number };

export class ProfilePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: FunctionRef | undefined;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly store: ResultStore,
              private readonly openKernel: (ref: FunctionRef, kernel: string, column: vscode.ViewColumn) => Thenable<unknown>) {
    // A newer profile of the function on show (profiled again on save) replaces the page.
    this.subscription = store.onDidChange((ref) => {
      if (this.shown && functionKey(ref) === functionKey(this.shown)) {
        this.render(this.shown);
      }
    });
  }

  /** Shows the function's profile from the store, beside the active editor. */
  show(ref: FunctionRef): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(PROFILE_VIEW_TYPE, '', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
                                                    { enableScripts: true, localResourceRoots: [] });
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((message: PanelMessage) => this.onMessage(message));
    } else {
      this.panel.reveal(undefined, true);
    }
    this.shown = ref;
    this.render(ref);
  }

  private render(ref: FunctionRef): void {
    const profile = this.store.profile(ref);
    if (this.panel && profile) {
      this.panel.title = `Profile · ${ref.function}`;
      this.panel.webview.html = renderProfileHtml(profile, randomBytes(16).toString('base64'), this.panel.webview.cspSource);
    }
  }

  private async onMessage(message: PanelMessage): Promise<void> {
    const ref = this.shown;
    if (!ref) {
      return;
    }
    if (message.type === 'openKernel') {
      await this.openKernel(ref, message.kernel, this.panel?.viewColumn ?? vscode.ViewColumn.Beside);
    } else if (message.type === 'openSource') {
      const position = new vscode.Position(Math.max(0, message.line - 1), message.column);
      const shown = vscode.window.visibleTextEditors.find((editor) => editor.document.uri.toString() === ref.uri);
      await vscode.window.showTextDocument(vscode.Uri.parse(ref.uri), { viewColumn: shown?.viewColumn ?? vscode.ViewColumn.One,
                                                                        selection: new vscode.Range(position, position) });
    }
  }

  dispose(): void {
    this.subscription.dispose();
    this.panel?.dispose();
  }
}
