// The `fuselens` settings section: what the extension reads itself and what it hands to the server
// (initializationOptions.settings and answers to workspace/configuration; docs/server.md, "Settings").
import * as os from 'os';
import * as vscode from 'vscode';

export const SECTION = 'fuselens';

export type NotificationLevel = 'off' | 'onError' | 'onWarning' | 'always';

/** Settings the server process depends on: changing one of them restarts it. */
export const RESTART_SETTINGS = ['fuselens.interpreter', 'fuselens.args'];

export interface ExtensionSettings {
  interpreter: string[];
  serverArgs: string[];
  showNotifications: NotificationLevel;
}

function config(scope?: vscode.Uri): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION, scope ?? vscode.workspace.workspaceFolders?.[0]?.uri);
}

/** `${workspaceFolder}`, `${userHome}` and a leading `~` in paths, as the Python tool extensions do. */
export function expandVariables(value: string, scope?: vscode.Uri): string {
  const folder = (scope && vscode.workspace.getWorkspaceFolder(scope)) ?? vscode.workspace.workspaceFolders?.[0];
  return value
    .replace(/\$\{workspaceFolder\}/g, folder?.uri.fsPath ?? '')
    .replace(/\$\{userHome\}/g, os.homedir())
    .replace(/^~(?=$|\/)/, os.homedir());
}

export function readExtensionSettings(scope?: vscode.Uri): ExtensionSettings {
  const section = config(scope);
  return {
    interpreter: section.get<string[]>('interpreter', []).map((part) => expandVariables(part, scope)),
    serverArgs: section.get<string[]>('args', []),
    showNotifications: section.get<NotificationLevel>('showNotifications', 'always'),
  };
}

/**
 * The section as the server reads it (camelCase keys, nested `worker`), with the interpreter the
 * extension resolved, so that the worker runs the user's code in the same environment as the server.
 * Unset rule lists stay out, so that [tool.fuselens] in pyproject.toml decides.
 */
export function serverSettings(interpreter: string[], scope?: vscode.Uri): Record<string, unknown> {
  const section = config(scope);
  const settings: Record<string, unknown> = {
    interpreter,
    severity: section.get('severity', {}),
    debounceMs: section.get('debounceMs', 250),
    worker: { timeoutS: section.get('worker.timeoutS', 120), memoryMb: section.get('worker.memoryMb', 4096) },
    profile: { repeats: section.get('profile.repeats', 20), torchCompile: section.get('profile.torchCompile', true) },
    execution: { onSave: section.get('execution.onSave', false) },
  };
  for (const key of ['select', 'ignore', 'assumeModulesCompiled']) {
    const value = section.get(key);
    if (value !== null && value !== undefined) {
      settings[key] = value;
    }
  }
  return settings;
}
