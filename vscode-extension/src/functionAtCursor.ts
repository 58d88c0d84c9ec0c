// The function a palette command applies to: the compile root (as the server's code lenses list
// them) that contains the cursor, else the one the user picks.
import * as vscode from 'vscode';
import { FunctionRef, ServerCommands } from './protocol';

interface Root {
  function: string;
  /** 0-based line of the first decorator, or of the def. */
  line: number;
}

async function rootsOf(document: vscode.TextDocument): Promise<Root[]> {
  const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri, 1000);
  const roots = new Map<string, Root>();
  for (const lens of lenses ?? []) {
    const [, name] = lens.command?.arguments ?? [];
    if (lens.command?.command === ServerCommands.compileAndProfile && typeof name === 'string') {
      roots.set(name, { function: name, line: lens.range.start.line });
    }
  }
  return [...roots.values()];
}

const indentation = (text: string): number => text.length - text.trimStart().length;

/** Whether `line` is inside the root's decorators or body, judged by indentation. */
export function contains(lines: string[], root: Root, line: number): boolean {
  if (line < root.line) {
    return false;
  }
  let def = root.line;
  while (def < lines.length && !/^\s*(async\s+)?def\b/.test(lines[def])) {
    def++;
  }
  const indent = indentation(lines[root.line]);
  for (let current = def + 1; current <= line && current < lines.length; current++) {
    const text = lines[current];
    const code = text.trim();
    // A line back at the def's indentation ends the body; `)` and `]` close a long signature.
    if (code && !code.startsWith('#') && indentation(text) <= indent && !/^[)\]]/.test(code)) {
      return false;
    }
  }
  return true;
}

export async function functionAtCursor(editor: vscode.TextEditor | undefined, action: string): Promise<FunctionRef | undefined> {
  if (!editor || editor.document.languageId !== 'python') {
    void vscode.window.showErrorMessage(`FuseLens: ${action} works on a Python file: open one and put the cursor in a function.`);
    return undefined;
  }
  const document = editor.document;
  const roots = await rootsOf(document);
  if (!roots.length) {
    void vscode.window.showErrorMessage(`FuseLens: no compiled function in ${vscode.workspace.asRelativePath(document.uri)}. ` +
      'FuseLens offers functions decorated with @torch.compile, passed to torch.compile(...), and nn.Module.forward.');
    return undefined;
  }
  const lines = Array.from({ length: document.lineCount }, (_, index) => document.lineAt(index).text);
  const cursor = editor.selection.active.line;
  const inside = roots.filter((root) => contains(lines, root, cursor)).sort((a, b) => b.line - a.line)[0];
  if (inside) {
    return { uri: document.uri.toString(), function: inside.function };
  }
  const picked = await vscode.window.showQuickPick(roots.map((root) => ({ label: root.function, description: `line ${root.line + 1}` })),
                                                   { title: `FuseLens: ${action}`, placeHolder: 'The cursor is in no compiled function: pick one' });
  return picked ? { uri: document.uri.toString(), function: picked.label } : undefined;
}
