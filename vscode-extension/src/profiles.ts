// The results the user produced in this session, by function: profiles (with their kernels) and
// transformed programs. Virtual documents and the profile panel read them from here.
import * as vscode from 'vscode';
import { FunctionRef, Profile, TransformedProgram } from './protocol';

export function functionKey(ref: FunctionRef): string {
  return `${ref.uri}\0${ref.function}`;
}

export class ResultStore implements vscode.Disposable {
  private readonly profiles = new Map<string, { ref: FunctionRef; profile: Profile }>();
  private readonly programs = new Map<string, TransformedProgram>();
  private readonly changed = new vscode.EventEmitter<FunctionRef>();
  /** Fires with the function whose profile or program was replaced. */
  readonly onDidChange = this.changed.event;

  profile(ref: FunctionRef): Profile | undefined {
    return this.profiles.get(functionKey(ref))?.profile;
  }

  program(ref: FunctionRef): TransformedProgram | undefined {
    return this.programs.get(functionKey(ref));
  }

  /** Functions of a document that have a profile. */
  profiledIn(uri: string): FunctionRef[] {
    return [...this.profiles.values()].map((entry) => entry.ref).filter((ref) => ref.uri === uri);
  }

  setProfile(ref: FunctionRef, profile: Profile): void {
    this.profiles.set(functionKey(ref), { ref, profile });
    this.changed.fire(ref);
  }

  setProgram(ref: FunctionRef, program: TransformedProgram): void {
    this.programs.set(functionKey(ref), program);
    this.changed.fire(ref);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
