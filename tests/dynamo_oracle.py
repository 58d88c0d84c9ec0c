"""The judge for the analyzer's corpus: what real torch._dynamo (2.13) does with each fixture.

    python tests/dynamo_oracle.py [FILES...]     # default: tests/corpus/*.py; exit 1 on disagreement

Fixture conventions (tests/corpus/*.py, importable modules, not collected by pytest)
------------------------------------------------------------------------------------
* Annotations are trailing comments on the line where the finding is reported:
      v = x.sum().item()  # expect: FL102 GB0124
      print(f"{x}")       # expect: FL110 GB0059; FL114 GB0569
  Graph-break rules (FL1xx, or FL000 where no rule fits yet) carry the Dynamo GB id;
  trace-unsafe (FL2xx) and recompile (FL3xx) rules are written alone: `# expect: FL201`.
* Compile roots are written the way users write them -- `@torch.compile`, `@torch.compile(...)`,
  `f = torch.compile(g)`, or an `nn.Module` subclass (its forward counts as compiled). Each is
  exercised by an entry of
      CASES = {"name": lambda: (root, args)}            # root: the function or a module instance
      CASES = {"name": lambda: (root, args, args2)}     # args2: other shapes, for FL301
  `torch.compile` is patched while a fixture is imported (it returns its argument unchanged and
  remembers the options), so decorated functions never reach inductor; the oracle compiles
  each root itself with a no-op backend, passing `dynamic=` through.
* Trace roots appear in the source as the first argument of a `torch.jit.trace(...)` or
  `torch.export.export(...)` call (usually inside a helper that is never run) and are exercised by
      TRACED = {"name": lambda: (fn, args)}

How the ground truth is measured
--------------------------------
graph-break  Each case is compiled (backend returns gm.forward) and called once; every record of
             the `graph_breaks` log artifact is a break at the innermost frame of its user-code
             traceback that lies in the fixture, with the first GB id in its message.
             (`torch._dynamo.explain` misses breaks that have an empty graph before them.)
recompile    Each case is called a second time with the same args: a recompile there is state
             the compiled code mutated (FL302), reported where the guarded attribute/global is
             stored to (Dynamo names the line that read it). A case with args2 is compiled again
             with dynamic=True and called with args then args2; if a size guard fails, FL301 is
             the line after which eager runs with args and with args2 first go different ways
             (the branch or loop args2 decides otherwise), unless Dynamo breaks there.
             Dynamo reports only the first failing guard, so: one shape branch per case, no
             FL301 case in a root that also mutates state, one mutated Python attribute per
             root. Give args distinct sizes per dimension (duck sizing turns equal sizes into
             equality guards) and avoid sizes 0/1 (always specialised).
             Guards on `___stackN` values (a Python value made by a graph break, e.g. `.item()`,
             and used after it is a constant of the resume function) are not judged: they
             follow from the annotated break.
trace-unsafe Each TRACED root is run through torch.jit.trace (check_trace=False). A TracerWarning
             (attributed to the innermost fixture frame) is classified by what Dynamo does on
             the same line: a data-dependent branch (GB0170) -> FL201, a host conversion
             (GB0124/GB0033/GB0109) -> FL202, no break (the tracer saw a size) -> FL203;
             anything else is an error. print/logging/warnings.warn/stream writes made while
             tracing (sys.setprofile) are dropped from the trace: FL204 (other Python side
             effects are not detected: keep them out of trace roots). The torch.tensor(<consts>)
             warning is ignored. torch.export roots are recognised in the source, but their
             truth is still measured with torch.jit.trace (export aborts at the first problem and
             keeps `.item()` as an unbacked symbol rather than baking it).

Consistency checks (errors): every torch.compile'd function and every nn.Module subclass of the
fixture is exercised by some case; every TRACED root appears in a trace/export call; every case
runs without raising. Lines of functions that ran inside a root but never executed are listed
as "unexercised" (Dynamo says nothing about them, so the truth there is undefined).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import sys
import time
import tokenize
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
# file name -> lines no case executed (see the docstring); written by --write-unexercised, checked
# by tests/test_corpus_dynamo.py, read by bench/corpus_score.py (which does not import torch)
UNEXERCISED = CORPUS / "unexercised.json"

CATEGORIES = ("graph-break", "trace-unsafe", "recompile")


# --------------------------------------------------------------------------- annotations
# (torch-free: bench/corpus_score.py imports this part)

@dataclass(frozen=True)
class Expect:
    line: int
    code: str  # "FL102"
    gb: str | None = None  # "GB0124" for graph-break annotations

    @property
    def category(self) -> str:
        return category_of(self.code)


def category_of(code: str) -> str:
    digit = code[2]
    if code == "FL000" or digit == "1":
        return "graph-break"
    if digit == "2":
        return "trace-unsafe"
    if digit == "3":
        return "recompile"
    raise ValueError(f"no category for rule {code}")


_EXPECT_RE = re.compile(r"#\s*expect:\s*(.*)$")
_ITEM_RE = re.compile(r"^(FL\d{3})(?:\s+(GB\d{4}))?$")


def parse_expectations(path: str | os.PathLike) -> list[Expect]:
    """Reads `# expect:` comments (real comments only, via tokenize) from a fixture."""
    expects = []
    with open(path, "rb") as fh:
        for tok in tokenize.tokenize(fh.readline):
            if tok.type != tokenize.COMMENT:
                continue
            match = _EXPECT_RE.search(tok.string)
            if not match:
                continue
            for item in filter(None, (part.strip() for part in match.group(1).split(";"))):
                parsed = _ITEM_RE.match(item)
                if not parsed:
                    raise ValueError(f"{path}:{tok.start[0]}: bad annotation {item!r}")
                code, gb = parsed.groups()
                expect = Expect(tok.start[0], code, gb)
                if (expect.category == "graph-break") != (gb is not None):
                    raise ValueError(f"{path}:{tok.start[0]}: graph-break rules (and only they) "
                                     f"take a GB id: {item!r}")
                expects.append(expect)
    return expects


def _load_rules():
    spec = importlib.util.spec_from_file_location("_fuselens_rules", ROOT / "analysis" / "rules.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while it executes
    spec.loader.exec_module(module)
    return module.RULES


# --------------------------------------------------------------------------- observations

@dataclass(frozen=True)
class Observed:
    line: int
    code: str  # GB id for graph breaks, FL2xx/FL3xx otherwise
    detail: str
    case: str


@dataclass
class FileResult:
    path: Path
    cases: int = 0
    traced: int = 0
    clean_cases: int = 0
    breaks: list[Observed] = field(default_factory=list)
    trace: list[Observed] = field(default_factory=list)
    recompiles: list[Observed] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    unexercised: list[int] = field(default_factory=list)
    resume_specializations: int = 0
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and not self.disagreements


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@contextlib.contextmanager
def _dynamo_logs():
    """Routes the graph_breaks/recompiles artifacts to a list instead of stderr."""
    import torch

    logger = logging.getLogger("torch._dynamo")
    saved = (list(logger.handlers), logger.propagate)
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    sink = _Records()
    logger.addHandler(sink)
    logger.propagate = False
    try:
        yield sink
    finally:
        logger.removeHandler(sink)
        torch._logging.set_logs()
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        for handler in saved[0]:
            logger.addHandler(handler)
        logger.propagate = saved[1]


@contextlib.contextmanager
def _no_root_handlers():
    """The fixture's log records reach only the handlers it installs itself: a runner's root
    handler (pytest's log capture) would format them, and `%.3f` of a tensor while tracing is a
    host conversion the same fixture does not make when the oracle runs on its own."""
    root = logging.getLogger()
    saved = list(root.handlers)
    for handler in saved:
        root.removeHandler(handler)
    try:
        yield
    finally:
        for handler in saved:
            root.addHandler(handler)


@contextlib.contextmanager
def _one_thread():
    """The fixtures' tensors are tiny: intra-op threads only cost time (more so on a busy box)."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def _seed():
    import random

    import torch

    random.seed(0)
    torch.manual_seed(0)


def _noop_backend(gm, example_inputs):
    return gm.forward


_FRAME_RE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_GB_RE = re.compile(r"gb/gb(\d{4})\.html")
_HEAD_RE = re.compile(r"Graph break in user code at (.+):(\d+)")
# `# if t > 4:  # orpus/attention.py:15 in forward`; the path is cut from the left. Locations
# noted as "first use of this value" are where a 0/1-specialised size was first read, not
# the code that guards on it.
_GUARD_LOC_RE = re.compile(r"#\s*(\S+\.py):(\d+) in \w+( \(user code shown is first use)?")


def _same_file(candidate: str, fixture: Path) -> bool:
    return os.path.realpath(candidate) == str(fixture)


def _break_line(message: str, fixture: Path) -> int | None:
    """The innermost frame of the user-code traceback that lies in the fixture."""
    _, _, traceback = message.partition("User code traceback:")
    lines = [int(m["line"]) for m in _FRAME_RE.finditer(traceback) if _same_file(m["path"], fixture)]
    if lines:
        return lines[-1]
    head = _HEAD_RE.search(message)  # "user stack suppressed": only the header remains
    if head and _same_file(head.group(1), fixture):
        return int(head.group(2))
    return None


def _break_reason(message: str) -> str:
    lines = message.splitlines()
    for i, text in enumerate(lines):
        if text.strip().startswith("Explanation:") and i:
            return lines[i - 1].strip().removeprefix("Graph Break Reason: ")
    return lines[1].strip() if len(lines) > 1 else message


def _guard_failures(message: str) -> list[str]:
    """Splits a recompile record into one text per failed guard (with its user stack)."""
    entries, current = [], None
    for text in message.splitlines():
        stripped = text.strip()
        if re.match(r"- \d+/\d+:", stripped):
            current = [stripped]
            entries.append(current)
        elif current is not None and stripped.startswith("-"):
            current.append(stripped)
    return ["\n".join(entry) for entry in entries]


def _guard_lines(entry: str, fixture: Path) -> list[int]:
    frames = [int(m["line"]) for m in _FRAME_RE.finditer(entry) if _same_file(m["path"], fixture)]
    if frames:
        return [frames[-1]]
    return sorted({int(m.group(2)) for m in _GUARD_LOC_RE.finditer(entry)
                   if not m.group(3) and str(fixture).endswith(m.group(1).lstrip("."))
                   and os.path.basename(m.group(1)) == fixture.name})


_RESUME_GUARD_RE = re.compile(r"\b___stack\d+\b")
_GUARDED_NAME_RE = re.compile(r"\.(\w+)|\[['\"](\w+)['\"]\]")


def _guarded_names(guard: str) -> set[str]:
    """`self.calls == 1` -> {"calls"}, `G['CALLS']['n'] == 0` -> {"CALLS", "n"}."""
    return {a or b for a, b in _GUARDED_NAME_RE.findall(guard)}


def _mutation_sites(source: str) -> dict[str, set[int]]:
    """Lines that store into `obj.name`, `obj.name[k]`, `NAME[k]` or a declared global NAME."""
    sites: dict[str, set[int]] = {}
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        declared = {n for node in ast.walk(func) if isinstance(node, (ast.Global, ast.Nonlocal))
                    for n in node.names}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            else:
                continue
            targets = [part for target in targets for part in _unpacked(target)]
            for target in targets:
                subscripted = False
                while isinstance(target, ast.Subscript):
                    target, subscripted = target.value, True
                if isinstance(target, ast.Attribute):
                    sites.setdefault(target.attr, set()).add(node.lineno)
                elif isinstance(target, ast.Name) and (subscripted or target.id in declared):
                    sites.setdefault(target.id, set()).add(node.lineno)
    return sites


def _unpacked(target: ast.expr) -> list[ast.expr]:
    """`self.var, self.count = ...`: each part of a tuple or list target is stored to."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [part for element in target.elts for part in _unpacked(element)]
    return [target.value if isinstance(target, ast.Starred) else target]


_SHAPE_GUARD_RE = re.compile(r"size\(\)|stride\(\)|(size|stride|rank) mismatch|numel|dim\(\)")


# --------------------------------------------------------------------------- loading

@contextlib.contextmanager
def _patched_compile(registry: dict):
    """torch.compile during import: return the target unchanged, remember its options."""
    import torch

    real = torch.compile

    def fake_compile(model=None, **options):
        if model is None:
            return lambda fn: fake_compile(fn, **options)
        registry[id(model)] = (model, options)
        return model

    torch.compile = fake_compile
    try:
        yield
    finally:
        torch.compile = real


def load_fixture(path: Path):
    registry: dict = {}
    name = "fuselens_corpus_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with _patched_compile(registry), contextlib.redirect_stdout(io.StringIO()):
        spec.loader.exec_module(module)
    return module, registry


def _trace_call_targets(source: str) -> set[str]:
    """Names passed first to torch.jit.trace(...) / torch.export.export(...) / export(...)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            callee = ast.unparse(node.func)
            if callee.endswith(("jit.trace", "export.export")) or callee in ("trace", "export"):
                target = node.args[0]
                while isinstance(target, ast.Call):  # torch.jit.trace(Model(...), ...), Model().eval()
                    func = target.func
                    target = func.value if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
                        else func
                names.add(ast.unparse(target).rsplit(".", 1)[-1])
    return names


def _executable_lines(code) -> set[int]:
    lines = {line for _, _, line in code.co_lines() if line is not None}
    lines.discard(code.co_firstlineno)  # the `def` line itself
    return lines


# --------------------------------------------------------------------------- judging one file

def observe(path: Path) -> FileResult:
    import torch

    path = Path(os.path.realpath(path))
    result = FileResult(path)
    started = time.perf_counter()
    try:
        module, compiled = load_fixture(path)
    except Exception as exc:  # noqa: BLE001 - a broken fixture is a finding, not a crash
        result.errors.append(f"import failed: {type(exc).__name__}: {exc}")
        return result
    cases = getattr(module, "CASES", {})
    traced = getattr(module, "TRACED", {})
    result.cases, result.traced = len(cases), len(traced)

    covered_fns, covered_types, executed = set(), set(), {}
    mutations = _mutation_sites(path.read_text())
    with _dynamo_logs() as sink, _no_root_handlers(), _one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in cases.items():
            try:
                root, covered = _run_case(name, make, path, compiled, sink, result, executed,
                                          mutations)
            except Exception as exc:  # noqa: BLE001
                result.errors.append(f"case {name!r} raised {type(exc).__name__}: {exc}")
                continue
            if isinstance(root, torch.nn.Module):
                covered_types |= covered
            else:
                covered_fns.add(id(root))
        for name, make in traced.items():
            try:
                _run_traced(name, make, path, sink, result, executed)
            except Exception as exc:  # noqa: BLE001
                result.errors.append(f"traced {name!r} raised {type(exc).__name__}: {exc}")

    _check_roots(module, path, compiled, covered_fns, covered_types, result)
    ran = set()
    for code, lines in executed.items():
        ran |= lines
    result.unexercised = sorted({line for code in executed for line in _executable_lines(code)} - ran)
    result.seconds = time.perf_counter() - started
    return result


def _line_tracer(path: Path, executed: dict, sequence: list):
    target = str(path)

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != target:
            return None
        frame.f_trace_opcodes = True  # a ternary branches within one line
        executed.setdefault(frame.f_code, set())
        if event == "line":
            executed[frame.f_code].add(frame.f_lineno)
        elif event == "opcode":
            sequence.append((frame.f_lineno, frame.f_lasti))
        return tracer

    return tracer


def _eager(root, args, path, executed) -> list[tuple]:
    """Runs the root eagerly under a tracer: the (line, instruction) steps in the fixture."""
    sequence: list[tuple] = []
    _seed()
    sys.settrace(_line_tracer(path, executed, sequence))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            root(*args)
    finally:
        sys.settrace(None)
    return sequence


def _divergence(first: list[tuple], second: list[tuple]) -> set[int]:
    """The line after which two runs first went different ways: the branch the inputs decide.

    Only the first: later differences may be consequences of it (`if mask is not None` after
    a shape branch chose mask=None)."""
    for i, (a, b) in enumerate(zip(first, second)):
        if a != b:
            return {first[i - 1][0]} if i else set()
    return set()


def _run_case(name, make, path, compiled, sink, result, executed, mutations):
    import torch

    # Eagerly first, on a root of its own: coverage, and (with args2) which branches the
    # shapes of args2 decide differently once the root is warm (called once already).
    _seed()
    root, args, *rest = make()
    ran_here: dict = {}  # this case's lines: where its mutations can be
    _eager(root, args, path, ran_here)
    branches = set()
    if rest:
        branches = _divergence(_eager(root, args, path, ran_here),
                                _eager(root, rest[0], path, ran_here))
    for code, lines in ran_here.items():
        executed.setdefault(code, set()).update(lines)

    # A fresh root and inputs for the compiled runs: roots may update weights or inputs in place.
    _seed()
    root, args, *rest = make()
    args2 = rest[0] if rest else None
    options = compiled.get(id(getattr(root, "__func__", root)), (None, {}))[1]
    dynamic = options.get("dynamic")

    torch._dynamo.reset()
    sink.records.clear()
    fn = torch.compile(root, backend=_noop_backend, dynamic=dynamic)
    with contextlib.redirect_stdout(io.StringIO()):
        _seed()
        fn(*args)
        breaks = list(sink.records)
        sink.records.clear()
        _seed()
        fn(*args)  # same inputs again: only mutated state can fail a guard
        recompiles = [(r, False) for r in sink.records]
        if args2 is not None:
            torch._dynamo.reset()
            sink.records.clear()
            fn = torch.compile(root, backend=_noop_backend, dynamic=True)
            _seed()
            fn(*args)
            _seed()
            fn(*args2)
            recompiles += [(r, True) for r in sink.records]

    seen = set()
    for record in breaks:
        if not record.name.endswith("__graph_breaks"):
            continue
        message = record.getMessage()
        line = _break_line(message, path)
        gb = _GB_RE.search(message)
        if line is None or gb is None:
            if "user stack suppressed" not in message:
                result.errors.append(f"case {name!r}: graph break outside the fixture: "
                                     f"{message.splitlines()[0]} ({_break_reason(message)})")
            continue
        key = (line, "GB" + gb.group(1))
        if key not in seen:
            seen.add(key)
            result.breaks.append(Observed(line, key[1], _break_reason(message), name))
    if not seen:
        result.clean_cases += 1

    break_lines = {line for line, _gb in seen}
    shape_recompile = False
    for record, dynamic_run in recompiles:
        if not record.name.endswith("__recompiles"):
            continue
        for entry in _guard_failures(record.getMessage()):
            guard = entry.splitlines()[0].split("#")[0].strip()
            if _SHAPE_GUARD_RE.search(guard):
                # Dynamo reports only the first failing guard, often a slice bound or a
                # duck-sizing equality; the branches that args2 takes the other way are
                # what the finding is about.
                shape_recompile |= dynamic_run
            elif _RESUME_GUARD_RE.search(guard):
                # A Python value made by a graph break (`.item()`) and used after it is a
                # constant of the resume function: new values recompile it. That is a
                # consequence of the (annotated) break, not of a shape or of mutated state.
                result.resume_specializations += 1
            else:
                # Dynamo names the line that read the value; the finding belongs where the
                # compiled code wrote it (the same line for `self.calls += 1`).
                ran = set().union(*ran_here.values())
                written = set().union(*(mutations.get(n, set()) for n in _guarded_names(guard)))
                lines = sorted(written & ran) or _guard_lines(entry, path)
                if not lines:
                    result.notes.append(f"case {name!r}: recompile with no fixture line: {guard}")
                for line in lines:
                    result.recompiles.append(Observed(line, "FL302", guard, name))
    if args2 is not None and not shape_recompile:
        result.notes.append(f"case {name!r}: args2 did not recompile")
    if shape_recompile:
        for line in sorted(branches - break_lines):
            result.recompiles.append(Observed(line, "FL301", "branch taken the other way by args2",
                                              name))

    covered = set()
    if isinstance(root, torch.nn.Module):
        covered = {type(m) for m in root.modules()}
    return root, covered


# Python-level calls into these count as side effects (warnings.warn is a C call, checked
# separately, so the warnings machinery run for TracerWarnings does not count).
_SIDE_EFFECT_MODULES = ("logging",)
_VALUE_BREAKS = {"GB0124", "GB0033", "GB0109"}  # .item()/float()/int(), data-dependent ops, tolist


def _run_traced(name, make, path, sink, result, executed):
    import torch

    _seed()
    fn, args, *_ = make()
    target = str(path)
    warned: dict[int, str] = {}
    effects: dict[int, str] = {}

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, torch.jit.TracerWarning):
            return
        text = str(message)
        if text.startswith("torch.tensor results are registered as constants"):
            return
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != target:
            frame = frame.f_back
        if frame is None:
            result.errors.append(f"traced {name!r}: TracerWarning outside the fixture "
                                 f"({filename}:{lineno}): {text[:80]}")
        else:
            warned.setdefault(frame.f_lineno, text)

    def profiler(frame, event, arg):
        # A print/log/write/warn called directly from a fixture line is a side effect of it.
        if event == "c_call" and frame.f_code.co_filename == target:
            callee = getattr(arg, "__qualname__", "")
            owner = getattr(arg, "__self__", None)
            if arg is print or callee == "warn" or (
                    callee.endswith(".write") and owner in (sys.stdout, sys.stderr)):
                effects.setdefault(frame.f_lineno, callee)
        elif event == "call" and frame.f_back is not None \
                and frame.f_back.f_code.co_filename == target:
            module = frame.f_globals.get("__name__", "")
            if module in _SIDE_EFFECT_MODULES and frame.f_code.co_name != "getLogger":
                effects.setdefault(frame.f_back.f_lineno, f"{module}.{frame.f_code.co_name}")

    sys.settrace(_line_tracer(path, executed, []))
    sys.setprofile(profiler)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("always")
            warnings.showwarning = showwarning
            traced = torch.jit.trace(fn, args, check_trace=False)
    finally:
        sys.setprofile(None)
        sys.settrace(None)

    effects_after: dict[int, str] = {}
    if effects:  # the traced program must not repeat them (it is a graph, not Python)
        before = dict(effects)
        effects.clear()
        sys.setprofile(profiler)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                traced(*args)
        finally:
            sys.setprofile(None)
        effects_after, effects = effects, before
    for line, callee in effects.items():
        if line not in effects_after:
            result.trace.append(Observed(line, "FL204", callee, name))

    # Which warned lines depend on values? Those where Dynamo cannot trace them either: a
    # data-dependent branch (GB0170) bakes a branch, a host conversion bakes a value. Where
    # Dynamo traces the line fine, the tracer warned about a size: a baked shape decision.
    torch._dynamo.reset()
    sink.records.clear()
    with contextlib.redirect_stdout(io.StringIO()):
        _seed()
        torch.compile(fn, backend=_noop_backend)(*args)
    dynamo = {}
    for record in sink.records:
        if record.name.endswith("__graph_breaks"):
            gb = _GB_RE.search(record.getMessage())
            line = _break_line(record.getMessage(), path)
            dynamo.setdefault(line, set()).add("GB" + gb.group(1) if gb else "?")
    for line, text in warned.items():
        gbs = dynamo.get(line, set())
        if not gbs:
            code = "FL203"
        elif "GB0170" in gbs and "Python boolean" in text:
            code = "FL201"
        elif gbs & _VALUE_BREAKS and "Python boolean" not in text:
            code = "FL202"
        else:
            result.errors.append(f"traced {name!r}: line {line}: cannot classify TracerWarning "
                                 f"{text.split(' might')[0]!r} with Dynamo breaks {sorted(gbs)}")
            continue
        result.trace.append(Observed(line, code, text.split(" might")[0], name))


def _check_roots(module, path, compiled, covered_fns, covered_types, result):
    import torch

    for target, _options in compiled.values():
        if isinstance(target, torch.nn.Module) or isinstance(target, type):
            continue
        if getattr(target, "__module__", None) != module.__name__:
            continue
        if id(target) not in covered_fns:
            result.errors.append(f"torch.compile'd {target.__qualname__} is not exercised by CASES")
    for value in vars(module).values():
        if (isinstance(value, type) and issubclass(value, torch.nn.Module)
                and value.__module__ == module.__name__ and value not in covered_types):
            result.errors.append(f"nn.Module {value.__qualname__} is not reached by any CASES root")
    source = path.read_text()
    targets = _trace_call_targets(source)
    for name, make in getattr(module, "TRACED", {}).items():
        fn = make()[0]
        fn_name = getattr(fn, "__name__", type(fn).__name__)
        if fn_name not in targets:
            result.errors.append(f"TRACED {name!r}: {fn_name} is never passed to "
                                 f"torch.jit.trace/torch.export.export in the source")


def judge(path: Path, rules=None) -> FileResult:
    """Observes a fixture and compares with its annotations (fills result.disagreements)."""
    rules = rules if rules is not None else _load_rules()
    result = observe(path)
    try:
        expects = parse_expectations(result.path)
    except ValueError as exc:
        result.errors.append(str(exc))
        return result
    for expect in expects:
        if expect.code != "FL000" and expect.code not in rules:
            result.errors.append(f"line {expect.line}: unknown rule {expect.code}")

    name = result.path.name
    want = {(e.line, e.gb) for e in expects if e.category == "graph-break"}
    got = {(o.line, o.code): o for o in result.breaks}
    for line, gb in sorted(set(got) - want):
        o = got[(line, gb)]
        result.disagreements.append(f"{name}:{line}: Dynamo breaks here, not annotated: {gb} "
                                    f"({o.detail}) [case {o.case}]")
    for line, gb in sorted(want - set(got)):
        result.disagreements.append(f"{name}:{line}: annotated {gb}, Dynamo does not break here")

    for category, observed in (("trace-unsafe", result.trace), ("recompile", result.recompiles)):
        want = {(e.line, e.code) for e in expects if e.category == category}
        got = {(o.line, o.code): o for o in observed}
        for line, code in sorted(set(got) - want):
            o = got[(line, code)]
            result.disagreements.append(f"{name}:{line}: observed {code}, not annotated "
                                        f"({o.detail}) [{o.case}]")
        for line, code in sorted(want - set(got)):
            result.disagreements.append(f"{name}:{line}: annotated {code}, not observed")
    return result


def count_roots(path: Path) -> tuple[int, int]:
    """Entries of the CASES and TRACED dict literals, read without importing the fixture."""
    counts = {"CASES": 0, "TRACED": 0}
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in counts:
                    counts[target.id] = len(node.value.keys)
    return counts["CASES"], counts["TRACED"]


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("_"))


def load_unexercised() -> dict[str, list[int]]:
    return json.loads(UNEXERCISED.read_text()) if UNEXERCISED.exists() else {}


def write_unexercised(results: list[FileResult]) -> None:
    """Records the judged files' unexercised lines; entries of files that no longer exist go."""
    known = {path.name for path in corpus_files()}
    table = {name: lines for name, lines in load_unexercised().items() if name in known}
    for result in results:
        if result.path.parent.resolve() == CORPUS.resolve():
            table.pop(result.path.name, None)
            if result.unexercised:
                table[result.path.name] = result.unexercised
    UNEXERCISED.write_text(json.dumps(dict(sorted(table.items()))).replace("], ", "],\n ") + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true", help="list every observation")
    parser.add_argument("--write-unexercised", action="store_true",
                        help=f"record the files' unexercised lines in {UNEXERCISED.relative_to(ROOT)}")
    options = parser.parse_args(argv)
    files = options.files or corpus_files()
    started, cpu_started = time.perf_counter(), time.process_time()
    rules = _load_rules()
    results = []
    for path in files:
        result = judge(path, rules)
        results.append(result)
        status = "ok  " if result.ok else "FAIL"
        print(f"{status} {path.name:<28} cases={result.cases:<3} traced={result.traced:<2} "
              f"breaks={len({(o.line, o.code) for o in result.breaks}):<3} {result.seconds:5.1f}s")
        for text in result.errors:
            print(f"     error: {text}")
        for text in result.disagreements:
            print(f"     {text}")
        if result.unexercised:
            print(f"     unexercised lines: {result.unexercised}")
        if options.verbose:
            for text in result.notes:
                print(f"     note: {text}")
        if options.verbose:
            for o in sorted(result.breaks + result.trace + result.recompiles,
                            key=lambda o: (o.line, o.code)):
                print(f"     {o.line:>4} {o.code} {o.detail} [{o.case}]")

    if options.write_unexercised:
        write_unexercised(results)
    cases = sum(r.cases for r in results)
    clean = sum(r.clean_cases for r in results)
    gb_counts = Counter(code for r in results for _line, code in {(o.line, o.code) for o in r.breaks})
    trace = Counter(o.code for r in results for o in {(o.line, o.code): o for o in r.trace}.values())
    recompile = Counter(o.code for r in results
                        for o in {(o.line, o.code): o for o in r.recompiles}.values())
    failed = [r for r in results if not r.ok]
    print(f"\n{len(results)} files, {cases} compile roots ({clean} clean, "
          f"{100 * clean / max(cases, 1):.0f}%), {sum(r.traced for r in results)} trace roots")
    print("graph-break lines by GB id: " + ", ".join(f"{k} {v}" for k, v in sorted(gb_counts.items())))
    print("trace-unsafe lines: " + ", ".join(f"{k} {v}" for k, v in sorted(trace.items())))
    print("recompile lines: " + ", ".join(f"{k} {v}" for k, v in sorted(recompile.items())))
    print(f"{len(failed)} file(s) disagree; {time.perf_counter() - started:.1f}s wall, "
          f"{time.process_time() - cpu_started:.1f}s CPU")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
