// The language status item on Python files: torch version and the back end code would compile for.
import * as vscode from 'vscode';
import { PythonEnvironment } from './environment';
import { Interpreter } from './interpreter';

const BACKENDS = { cpu: 'CPU/C++', cuda: 'CUDA/Triton' } as const;

export class EnvironmentStatus implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem('fuselens.environment', { language: 'python' });

  constructor() {
    this.item.name = 'FuseLens';
    this.item.command = { title: 'Restart', command: 'fuselens.restartServer', tooltip: 'Restart the FuseLens server' };
  }

  get text(): string {
    return this.item.text;
  }

  get detail(): string | undefined {
    return this.item.detail;
  }

  starting(interpreter: Interpreter): void {
    this.item.busy = true;
    this.item.severity = vscode.LanguageStatusSeverity.Information;
    this.item.text = 'FuseLens starting';
    this.item.detail = `${interpreter.command.join(' ')} (${interpreter.origin})`;
  }

  environment(environment: PythonEnvironment, device?: keyof typeof BACKENDS): void {
    this.item.busy = device === undefined && environment.torch !== null;
    this.item.detail = `FuseLens ${environment.fuselens} · Python ${environment.python} · ${environment.executable}`;
    if (environment.torch === null) {
      this.item.severity = vscode.LanguageStatusSeverity.Warning;
      this.item.text = 'torch not installed';
      return;
    }
    this.item.severity = vscode.LanguageStatusSeverity.Information;
    this.item.text = `torch ${environment.torch}` + (device ? ` · ${BACKENDS[device]}` : '');
  }

  problem(summary: string, detail: string): void {
    this.item.busy = false;
    this.item.severity = vscode.LanguageStatusSeverity.Error;
    this.item.text = summary;
    this.item.detail = detail;
  }

  dispose(): void {
    this.item.dispose();
  }
}
