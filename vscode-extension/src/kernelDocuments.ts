// Kernels and transformed programs as read-only virtual documents on the `fuselens-kernel:` scheme.
// Their paths end in .cpp (C++ kernels) or .py (Triton kernels, programs), so the user's theme
// highlights them; provenance comments link back to the source lines.
import * as path from 'path';
import * as vscode from 'vscode';
import { ResultStore, functionKey } from './profiles';
import { FunctionRef, KernelLanguage, KernelSource, TransformedProgram } from './protocol';

export const KERNEL_SCHEME = 'fuselens-kernel';
const PROGRAM = 'transformed';

type View = { ref: FunctionRef; kernel?: string };

export function kernelUri(ref: FunctionRef, kernel: string, language: KernelLanguage): vscode.Uri {
  const extension = language === 'cpp' ? 'cpp' : 'py';
  return viewUri(ref, `${kernel}.${extension}`, new URLSearchParams({ uri: ref.uri, function: ref.function, kernel }));
}

export function programUri(ref: FunctionRef): vscode.Uri {
  return viewUri(ref, `${PROGRAM}.py`, new URLSearchParams({ uri: ref.uri, function: ref.function }));
}

/** `fuselens-kernel:/model.py/rms_norm/kernel0.cpp?...`: the tab reads "kernel0.cpp", described by file and function. */
function viewUri(ref: FunctionRef, name: string, query: URLSearchParams): vscode.Uri {
  const file = path.posix.basename(vscode.Uri.parse(ref.uri).path);
  return vscode.Uri.from({ scheme: KERNEL_SCHEME, path: `/${file}/${ref.function}/${name}`, query: query.toString() });
}

function parseViewUri(uri: vscode.Uri): View {
  const query = new URLSearchParams(uri.query);
  return { ref: { uri: query.get('uri') ?? '', function: query.get('function') ?? '' }, kernel: query.get('kernel') ?? undefined };
}

/** A comment (`//` or `#`) that names a Python source line: `/abs/model.py:12`. */
const SOURCE_LOCATION = /((?:[A-Za-z]:)?[\\/][^\s:'"]*\.py):(\d+)/g;

export function provenanceLinks(document: vscode.TextDocument): vscode.DocumentLink[] {
  const links: vscode.DocumentLink[] = [];
  for (let line = 0; line < document.lineCount; line++) {
    const text = document.lineAt(line).text;
    const comment = text.search(/\/\/|#/);
    if (comment < 0) {
      continue;
    }
    for (const match of text.slice(comment).matchAll(SOURCE_LOCATION)) {
      const start = comment + (match.index ?? 0);
      const target = vscode.Uri.file(match[1]).with({ fragment: `L${match[2]}` });
      const link = new vscode.DocumentLink(new vscode.Range(line, start, line, start + match[0].length), target);
      link.tooltip = `Open ${path.basename(match[1])} at line ${match[2]}`;
      links.push(link);
    }
  }
  return links;
}

export function renderProgram(ref: FunctionRef, program: TransformedProgram): string {
  const file = vscode.Uri.parse(ref.uri).fsPath;
  const header = [`# FuseLens: the transformed program of ${ref.function} (what runs in its place)`];
  if (program.guards.length) {
    header.push('# guards, checked on every call:', ...program.guards.map((guard) => `#   ${guard}`));
  }
  if (program.graphBreaks.length) {
    header.push('# graph breaks:', ...program.graphBreaks.map((item) =>
      `#   ${file}:${item.line}  ${item.reason}${item.rule ? ` [${item.rule}]` : ''}`));
  }
  return `${header.join('\n')}\n\n${program.source}`;
}

export class KernelDocuments implements vscode.TextDocumentContentProvider, vscode.DocumentLinkProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly store: ResultStore,
              private readonly fetchKernel: (ref: FunctionRef, kernel: string) => Promise<KernelSource>) {
    // A new profile or program replaces what open views of that function show.
    this.subscription = store.onDidChange((ref) => {
      for (const document of vscode.workspace.textDocuments) {
        if (document.uri.scheme === KERNEL_SCHEME && functionKey(parseViewUri(document.uri).ref) === functionKey(ref)) {
          this.changed.fire(document.uri);
        }
      }
    });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { ref, kernel } = parseViewUri(uri);
    if (kernel === undefined) {
      const program = this.store.program(ref);
      const profile = this.store.profile(ref);
      if (program) {
        return renderProgram(ref, program);
      }
      if (profile) {
        return renderProgram(ref, { function: ref.function, source: profile.transformedProgram, guards: profile.guards,
                                    graphBreaks: profile.graphBreaks });
      }
      return `# No transformed program of ${ref.function} yet: run "Show transformed program" on it.\n`;
    }
    const stored = this.store.profile(ref)?.kernels.find((item) => item.name === kernel);
    if (stored) {
      return stored.source;
    }
    try {
      return (await this.fetchKernel(ref, kernel)).source;
    } catch (error) {
      return `# ${kernel} of ${ref.function} is not available: ${error instanceof Error ? error.message : error}\n`;
    }
  }

  provideDocumentLinks(document: vscode.TextDocument): vscode.DocumentLink[] {
    return provenanceLinks(document);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
