// The server's custom requests and the shapes they answer (docs/server.md, "Commands and custom requests").
// Lines are 1-based source lines, columns 0-based.

export interface FunctionRef {
  uri: string;
  function: string;
}

export interface GraphBreak {
  line: number;
  column: number;
  reason: string;
  rule: string | null;
}

export interface Provenance {
  path: string;
  line: number;
  ops: string[];
}

export type KernelLanguage = 'cpp' | 'triton';

export interface KernelSource {
  name: string;
  language: KernelLanguage;
  source: string;
}

export interface Kernel extends KernelSource {
  provenance: Provenance[];
  timeMs: number | null;
  bytes: number | null;
  gbps: number | null;
}

export interface Profile {
  function: string;
  uri: string;
  summary: string;
  device: 'cpu' | 'cuda';
  backend: 'cpp' | 'triton';
  torchVersion: string;
  ops: number;
  regions: number;
  graphBreaks: GraphBreak[];
  guards: string[];
  // A variant that could not be timed (or compiled) is null.
  timings: { eagerMs: number | null; torchCompileMs: number | null; fuselensMs: number | null; repeats: number };
  speedup: { vsEager: number | null; vsTorchCompile: number | null };
  compileSeconds: { fuselens: number | null; torchCompile: number | null };
  correct: boolean;
  /** null when the outputs hold no tensors to compare. */
  maxAbsError: number | null;
  kernels: Kernel[];
  transformedProgram: string;
  /** Where FuseLens fell back to Python or torch.compile, in words (newer servers). */
  fallbacks?: string[];
}

export interface TransformedProgram {
  function: string;
  source: string;
  guards: string[];
  graphBreaks: GraphBreak[];
}

export interface DynamoExplanation {
  graphCount: number;
  graphBreakCount: number;
  breaks: { location: [number, number, number, number] | null; reason: string; gbId: string | null }[];
  seconds: number;
}

export const Requests = {
  profile: 'fuselens/profile',
  kernels: 'fuselens/kernels',
  kernelSource: 'fuselens/kernelSource',
  transformedProgram: 'fuselens/transformedProgram',
  explainDynamo: 'fuselens/explainDynamo',
} as const;

export const SetWorkspaceTrust = 'fuselens/setWorkspaceTrust';

/** Commands the server lists in executeCommandProvider; its code lenses invoke them with [uri, function(, kernel)]. */
export const ServerCommands = {
  compileAndProfile: 'fuselens.compileAndProfile',
  explainDynamo: 'fuselens.explainDynamo',
  showTransformedProgram: 'fuselens.showTransformedProgram',
  showKernel: 'fuselens.showKernel',
} as const;

/** Failure kinds the server puts in a RequestFailed error's data (docs/server.md, "Failures"). */
export interface FailureData {
  kind: string;
  detail?: string;
}
