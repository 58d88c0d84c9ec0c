// Which Python runs the server (and, through the server's worker, the user's code):
// the fuselens.interpreter setting, else the Python extension's active environment, else python3.
import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';

export interface Interpreter {
  /** Executable and arguments, e.g. ["/home/me/.venv/bin/python"]. */
  command: string[];
  /** Where it came from, for messages and the log. */
  origin: string;
}

const PYTHON_EXTENSION_ID = 'ms-python.python';

async function pythonExtension(): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    return undefined;
  }
  return PythonExtension.api();
}

async function activeEnvironment(scope: vscode.Uri | undefined): Promise<string | undefined> {
  const python = await pythonExtension();
  if (!python) {
    return undefined;
  }
  const active = python.environments.getActiveEnvironmentPath(scope);
  const resolved = await python.environments.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath;
}

/**
 * In an untrusted workspace the Python extension's environment is not used: it is often a virtual
 * environment inside the workspace, and starting its python would run files the workspace ships.
 * (VS Code itself ignores workspace values of fuselens.interpreter there: it is a restricted setting.)
 */
export async function resolveInterpreter(configured: string[], trusted: boolean,
                                         scope: vscode.Uri | undefined, log: vscode.LogOutputChannel): Promise<Interpreter> {
  if (configured.length > 0) {
    return { command: configured, origin: 'the fuselens.interpreter setting' };
  }
  if (trusted) {
    try {
      const executable = await activeEnvironment(scope);
      if (executable) {
        return { command: [executable], origin: "the Python extension's active environment" };
      }
    } catch (error) {
      log.warn(`could not ask the Python extension for its environment: ${error}`);
    }
  }
  return { command: ['python3'], origin: 'python3 on PATH' };
}

/** Calls `onChange` when the user selects another environment in the Python extension. */
export async function onDidChangePythonEnvironment(onChange: () => void): Promise<vscode.Disposable> {
  const python = await pythonExtension().catch(() => undefined);
  return python ? python.environments.onDidChangeActiveEnvironmentPath(onChange) : new vscode.Disposable(() => undefined);
}
