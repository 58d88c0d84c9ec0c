"""What the worker can run. Each task: prepare() (fail fast, before user code runs),
running_message(function), run(target, args, kwargs, ...) -> JSON-able dict."""
import json
import os
import time


class TaskError(Exception):
    """An expected failure with a message for the user; `kind` lets the server react."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class DynamoExplain:
    """Real torch._dynamo on the example inputs; its graph breaks, mapped to the user's file."""

    def prepare(self) -> None:
        import importlib.util

        # find_spec, not import: torch takes seconds to import, and user code may fail first.
        if importlib.util.find_spec("torch") is None:
            raise TaskError("unavailable", "torch is not installed in the worker's interpreter "
                                           "(setting fuselens.interpreter)")

    def running_message(self, function: str) -> str:
        return f"Running torch._dynamo.explain on {function}"

    def run(self, target, args, kwargs, *, path, source, function, options, stage=None) -> dict:
        import torch

        started = time.perf_counter()
        torch._dynamo.reset()
        output = torch._dynamo.explain(target)(*args, **kwargs)
        seconds = time.perf_counter() - started
        code = getattr(getattr(target, "forward", target), "__code__", None)
        try:
            summary = self._summary(output, path, source, seconds, torch.__version__)
            summary["firstLine"] = code.co_firstlineno if code is not None else 1
            return summary
        except Exception as error:  # our bug or a Dynamo API change, not the user's
            raise TaskError("internal", f"could not read torch._dynamo.explain's output: "
                                        f"{type(error).__name__}: {error}")

    def _summary(self, output, path, source, seconds, version) -> dict:
        lines = source.split("\n")
        registry = _gb_registry()
        breaks, seen = [], set()
        for reason in output.break_reasons:
            text = str(getattr(reason, "reason", reason))
            frame = _innermost_in(getattr(reason, "user_stack", []) or [], path)
            location = _location(frame, lines) if frame is not None else None
            headline = text.strip().splitlines()[0] if text.strip() else "graph break"
            for legacy, gb_type in _LEGACY_REASONS.items():
                if headline.startswith(legacy):  # a terse internal reason: say what it means
                    text = f"{gb_type}\n  Explanation: {_LEGACY_EXPLANATIONS[gb_type]}\n  ({headline})"
                    headline = gb_type
            key = (tuple(location or ()), headline)
            if key in seen:  # the same break seen again on a recompile
                continue
            seen.add(key)
            breaks.append({"location": location, "reason": headline, "detail": text.strip(),
                           "gbId": registry.get(headline), "function": frame.name if frame else None})
        return {
            "graphCount": output.graph_count,
            "graphBreakCount": output.graph_break_count,
            "opsPerGraph": [len(ops) for ops in (output.ops_per_graph or [])],
            "breaks": breaks,
            "seconds": round(seconds, 3),
            "torch": version,
        }


# Reasons Dynamo 2.13 still reports without a registry entry's wording, by their GB type.
_LEGACY_REASONS = {"generic_jump": "Data-dependent branching"}
_LEGACY_EXPLANATIONS = {
    "Data-dependent branching": "the condition depends on a tensor's value, which is unknown while "
                                "tracing; Python decides it eagerly between two graphs.",
}


def _innermost_in(stack, path):
    for frame in reversed(stack):
        if frame.filename == path:
            return frame
    return None


def _location(frame, lines):
    """1-based line, 0-based code-point columns (frames count columns in UTF-8 bytes)."""
    line = frame.lineno or 1
    end_line = getattr(frame, "end_lineno", None) or line

    def chars(line_no, byte_col):
        if byte_col is None:
            return None
        text = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    column = chars(line, getattr(frame, "colno", None))
    end_column = chars(end_line, getattr(frame, "end_colno", None))
    if column is None:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        column, end_line, end_column = len(text) - len(text.lstrip()), line, len(text)
    return [line, column, end_line, end_column if end_column is not None else column]


def _gb_registry() -> dict:
    """Dynamo's graph-break registry, gb_type -> GB id (best effort)."""
    try:
        import torch._dynamo

        path = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
        with open(path, encoding="utf-8") as handle:
            table = json.load(handle)
        return {entry[0]["Gb_type"]: gb_id for gb_id, entry in table.items() if entry}
    except Exception:
        return {}


class CompilerTask:
    """Tasks served by the FuseLens compiler: `fuselens.compiler.profile.<entry>(fn, args, kwargs,
    options, stage=..., function=...) -> dict` (it imports torch, so only in run())."""

    MODULE = "fuselens.compiler.profile"

    def __init__(self, entry: str, what: str) -> None:
        self.entry, self.what = entry, what

    def prepare(self) -> None:
        import importlib.util

        try:
            found = importlib.util.find_spec(self.MODULE) is not None and importlib.util.find_spec("torch")
        except ImportError:
            found = False
        if not found:
            raise TaskError("unavailable", f"{self.what} needs torch and the FuseLens compiler ({self.MODULE}), "
                                           "which the worker's interpreter cannot import (setting fuselens.interpreter)")

    def running_message(self, function: str) -> str:
        return f"{self.what}: {function}"

    def run(self, target, args, kwargs, *, path, source, function, options, stage=None) -> dict:
        import importlib

        entry = getattr(importlib.import_module(self.MODULE), self.entry)
        result = entry(target, args, kwargs, options, stage=stage, function=function)
        if not isinstance(result, dict):
            raise TaskError("internal", f"{self.MODULE}.{self.entry} returned {type(result).__name__}, not a dict")
        return result


TASKS = {
    "dynamo-explain": DynamoExplain(),
    "compile-profile": CompilerTask("profile", "Compile and profile"),
    "transformed-program": CompilerTask("transformed_program", "Show transformed program"),
}
