"""The generated kernels of a profile: every graph the "fuselens" back end compiled, each kernel's
source, provenance (source lines and aten ops), bytes moved, and its own time where the back end can
time it (`profile_kernels`)."""
from __future__ import annotations

from torch._subclasses.fake_tensor import FakeTensor

from ..backend import fuselens_backend
from ..capture.backends import FuseLensBackend
from .measure import clone, rounded


class Recorder(FuseLensBackend):
    """The "fuselens" back end, keeping every graph it compiles (in order) with its example inputs."""

    def __init__(self) -> None:
        self.graphs: list = []  # (compiled callable, example inputs)
        self.graph_ops = 0  # ops of graphs that came through torch.compile (no capture report)

    def compile_aten(self, gm, example_inputs):
        compiled = super().compile_aten(gm, example_inputs)
        self._keep(compiled, example_inputs)
        return compiled

    def __call__(self, gm, example_inputs):  # the torch.compile path (functions without source)
        self.graph_ops += sum(n.op == "call_function" for n in gm.graph.nodes)
        compiled = fuselens_backend(gm, example_inputs)
        self._keep(compiled, example_inputs)
        return compiled

    def _keep(self, compiled, example_inputs) -> None:
        if getattr(compiled, "fuselens_info", None) is not None:
            self.graphs.append((compiled, clone(list(example_inputs))))

    @property
    def infos(self) -> list:
        return [compiled.fuselens_info for compiled, _ in self.graphs]


def kernel_times(recorder: Recorder, repeats: int) -> tuple[dict, str | None]:
    """{(graph index, kernel or extern name): median ms} and why some could not be timed."""
    times, why = {}, None
    for index, (compiled, inputs) in enumerate(recorder.graphs):
        profile = getattr(compiled, "profile_kernels", None)
        if profile is None:
            why = "this FuseLens back end cannot time kernels one by one"
        elif any(isinstance(x, FakeTensor) for x in inputs):
            why = "a graph compiled through torch.compile has no real example inputs to time its kernels with"
        else:
            for entry in profile(*inputs, repeats=max(repeats, 1)):
                times[(index, entry["name"])] = entry["ms"]
                if "+" in entry["name"]:
                    why = "kernels of one Triton segment are timed together (the segment's time is not split)"
    return times, why


def describe(recorder: Recorder, times: dict) -> tuple[list, list]:
    """(kernels, extern torch calls) as the editor's profile lists them. Names are the back end's;
    when two graphs both have e.g. `kernel0`, every name gets its graph's index: `g1.kernel0`."""
    infos = recorder.infos
    names = [d.name for info in infos for d in info.kernel_details + list(getattr(info, "extern_details", []))]
    qualify = len(set(names)) != len(names)
    kernels, externs = [], []
    for index, info in enumerate(infos):
        for detail in info.kernel_details:
            entry = _entry(detail, index, qualify, times)
            entry["source"] = kernel_source(info.source, detail.name, info.backend)
            kernels.append(entry)
        for detail in getattr(info, "extern_details", []):
            externs.append(_entry(detail, index, qualify, times))
    return kernels, externs


def _entry(detail, index: int, qualify: bool, times: dict) -> dict:
    ms = times.get((index, detail.name))
    provenance = []
    for path, line, ops in getattr(detail, "lines", []):
        if line is not None:
            provenance.append({"path": path, "line": line, "ops": list(dict.fromkeys(
                op[:-len(".default")] if op.endswith(".default") else op for op in ops))})
    return {
        "name": f"g{index}.{detail.name}" if qualify else detail.name,
        "language": getattr(detail, "language", "cpp"),
        "provenance": provenance,
        "timeMs": rounded(ms),
        "bytes": detail.bytes,
        "gbps": rounded(detail.bytes / ms / 1e6) if ms else None,
        "buffers": [{"name": b[0], "shape": list(b[1]), "dtype": b[2], "bytes": b[3]} for b in detail.buffers],
    }


def kernel_source(source: str, name: str, language: str) -> str:
    """One kernel's part of a generated unit: from its provenance header to the next kernel."""
    marker = "// kernel " if language == "cpp" else "# kernel "
    ends = (marker, 'extern "C"', "def seg")
    kept = None
    for line in source.splitlines():
        if kept is None:
            if line.startswith(f"{marker}{name}:"):
                kept = [line]
        elif line.startswith(ends):
            break
        else:
            kept.append(line)
    return "\n".join(kept).rstrip() + "\n" if kept else source
