// What the chosen Python has: its version, FuseLens, torch and whether CUDA is usable.
// Reading versions runs no workspace code (the probe's working directory is the extension's own),
// so it is done in untrusted workspaces too.
import { execFile } from 'child_process';
import { Interpreter } from './interpreter';

export interface PythonEnvironment {
  python: string;
  executable: string;
  fuselens: string | null;
  torch: string | null;
}

/** Fast: package metadata only, so the server starts without waiting for `import torch`. */
const VERSIONS_SCRIPT = `
import importlib.metadata as metadata, importlib.util as util, json, sys
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown" if util.find_spec(name) else None
print(json.dumps({"python": sys.version.split()[0], "executable": sys.executable,
                  "fuselens": version("fuselens"), "torch": version("torch")}))
`;

/** Slow (imports torch): whether code would run on CUDA (Triton kernels) or the CPU (C++ kernels). */
const CUDA_SCRIPT = 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")';

export class ProbeError extends Error {
  constructor(message: string, readonly missingPython: boolean) {
    super(message);
  }
}

function runPython(interpreter: Interpreter, script: string, cwd: string, timeoutMs: number): Promise<string> {
  const [command, ...args] = interpreter.command;
  return new Promise((resolve, reject) => {
    execFile(command, [...args, '-c', script], { cwd, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (!error) {
        resolve(stdout.trim());
        return;
      }
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      const reason = missing ? 'it was not found' : (stderr.trim().split('\n').pop() || error.message);
      reject(new ProbeError(`could not run \`${interpreter.command.join(' ')}\` (${interpreter.origin}): ${reason}`, missing));
    });
  });
}

export async function probeVersions(interpreter: Interpreter, cwd: string): Promise<PythonEnvironment> {
  const output = await runPython(interpreter, VERSIONS_SCRIPT, cwd, 30_000);
  try {
    return JSON.parse(output.split('\n').pop() ?? '') as PythonEnvironment;
  } catch {
    throw new ProbeError(`\`${interpreter.command.join(' ')}\` printed something unexpected: ${output.slice(0, 200)}`, false);
  }
}

export async function probeDevice(interpreter: Interpreter, cwd: string): Promise<'cuda' | 'cpu'> {
  return (await runPython(interpreter, CUDA_SCRIPT, cwd, 120_000)).endsWith('cuda') ? 'cuda' : 'cpu';
}

/** The user-facing sentence for an environment that cannot run the server, or null when it can. */
export function missingServerMessage(environment: PythonEnvironment, interpreter: Interpreter): string | null {
  if (environment.fuselens !== null) {
    return null;
  }
  return `FuseLens is not installed in ${environment.executable} (Python ${environment.python}, from ${interpreter.origin}). ` +
    `Install it there with \`${environment.executable} -m pip install fuselens\`, or point fuselens.interpreter at an environment that has it.`;
}

export function missingTorchMessage(environment: PythonEnvironment): string | null {
  if (environment.torch !== null) {
    return null;
  }
  return `torch is not installed in ${environment.executable}: graph-break warnings work, but Compile and profile and ` +
    `Explain with Dynamo need it. Install it with \`${environment.executable} -m pip install torch\`.`;
}
