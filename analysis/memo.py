"""Analysis passes: one per compile root, over function walks memoised across passes.

Each root is analysed in a pass of its own (its own call stack, returns and collected
set), so its result depends only on the root and the code it reaches, never on which
roots ran before it. That makes a root's result cacheable: a RootResult lists every
function the pass read with the Block it read, and stays valid while none of them changed
(workspace.py checks that on each analysis; an edit inside one function replaces only
that function's Block).

Across passes, walks are memoised by (function, body text, mode, parameter types) with the
callee outcomes they relied on: a memoised walk is reused once each of those callees, as
it stands now, still gives the same outcome.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from . import kinds as K
from .attributes import class_attributes, instance_type
from .calls import CONTAINER_MUTATORS, argument_type
from .checker import CONTAINER_ANNOTATIONS, MAX_DEPTH, UNKNOWN_OUTCOME, FunctionWalker, constant_type, decorated
from .findings import CallSite, Finding, Fix, Span
from .index import COMPILE, SCRIPT, ClassInfo, FunctionInfo, chain_training, module_itself
from .params import GAP, argument_names, bind_parameters, may_use, root_parameters


@dataclass
class RootResult:
    epoch: int  # the Workspace's interface epoch the pass ran in
    # (function, chain, code, span relative to the def line, message, relative fix); the chain
    # is ((caller, relative call span), ...) from the root down to `function`
    findings: list[tuple]
    deps: list[tuple]  # (function, Block) of every function the pass read


class Analysis:
    """Runs compile roots, one pass each, sharing the Workspace's memo of walks."""

    def __init__(self, config, memo: dict, workspace, epoch: int = 0, generation: int = 0):
        self.config = config
        self.memo = memo
        self.workspace = workspace
        self.epoch = epoch
        self.generation = generation  # of the Workspace's indexes (attributes.py)
        self.registries: dict = {}  # (module path, dict name) → what decorators registered in it (calls.py)

    def run_root(self, mode: str, function: FunctionInfo, owner: ClassInfo | None = None,
                 passed: int | None = None, site: tuple | None = None) -> RootResult:
        self._returns: dict = {}  # key → (returns, breaks), in this pass
        self._active: set = set()  # keys being walked (recursion)
        self._collected: set = set()
        self.findings: list[tuple] = []
        self.deps: dict[int, tuple] = {id(function): (function, function.block)}
        self._guarded: set = set()  # (class key, attribute) the pass's walks guard on
        self._stores: list[tuple] = []  # (function, chain, store) of the walks' attribute stores
        if mode != SCRIPT and function.node is not None:
            wrapper = decorated(function, constant_type) if function.node.decorator_list else None
            if wrapper is None:
                params = root_parameters(function, owner, passed)
                if site is not None and function.cls is None:  # the arguments of a module-level call
                    params = self._called(function, site, mode, params)
                elif site is not None:  # `self` is the instance the module-level call builds
                    params = (self._constructed(function, owner or function.cls, site, mode), *params[1:])
                self.evaluate(function, mode, params, (), 0)
            else:  # `@torch.compile` over `@timed(...)`: what is compiled is the wrapper
                params = bind_parameters(wrapper.function, list(root_parameters(function, owner)), {}, None)
                self.evaluate(wrapper.function, mode, params + (wrapper.closure,), (), 0)
            if mode == COMPILE:
                self.findings.extend((function, (), *finding) for finding in self._mutated_arguments(function))
                self.findings.extend((function, chain, "FL302", span, message, None)
                                     for function, chain, (key, span, message) in self._stores
                                     if key in self._guarded)
        return RootResult(self.epoch, self.findings, list(self.deps.values()))

    def _constructed(self, function: FunctionInfo, cls: ClassInfo, site: tuple, mode: str):
        """The instance the call of `site` builds: its arguments are evaluated as names of
        `function`'s module (quietly: the call runs eagerly) and its `__init__` walked with them."""
        walker, args, kwargs = self._site_arguments(function, site, mode)
        instance = self.instance_type(walker, cls, args, kwargs, always=True)
        training = dict(site[2]).get("") if len(site) > 2 else None
        if training is not None:
            instance = K.in_mode(instance, training)
        for read, _text in walker.result.reads:  # an edit to an `__init__` read redoes the root
            self.deps[id(read)] = (read, read.block)
        return instance

    def _called(self, function: FunctionInfo, site: tuple, mode: str, guessed: tuple) -> tuple:
        """The parameters a module-level call of the compiled `function` passes; where an
        argument's type is unknown, what a root's parameter would be taken for."""
        _walker, args, kwargs = self._site_arguments(function, site, mode)
        bound = bind_parameters(function, args, kwargs, None)
        return tuple(g if b.kind == K.UNKNOWN else b for b, g in zip(bound, guessed)) + bound[len(guessed):]

    def _site_arguments(self, function: FunctionInfo, site: tuple, mode: str):
        """(walker, args, kwargs) of a module-level call, evaluated as names of `function`'s
        module (or as what the enclosing function bound them to), quietly (the call itself runs
        eagerly)."""
        call, bound = site[0], dict(site[1])
        modes = dict(site[2]) if len(site) > 2 else {}
        walker = FunctionWalker(self, function, mode, (), (), 0)
        walker.quiet += 1

        def argument(node: ast.expr) -> K.Ty:  # a function called there would be walked: unknown
            # a trace root: `Wrapper(Net(cfg).eval())`, or a name the function put in one mode
            # (index._training_modes has `model = Net(cfg).eval()` and `model.eval()` both)
            training = None
            if isinstance(node, ast.Name):
                training = modes.get(node.id)
                node = bound.get(node.id, node)
            elif len(site) > 2:
                training = chain_training(node)
            if len(site) > 2:
                node = module_itself(node)
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                callee = walker.dotted(call.func) or ""
                if callee != "functools.partial" and function.module.resolve_class(callee) is None:
                    return K.T_UNKNOWN
            ty = argument_type(walker, node)
            return K.in_mode(ty, training) if training is not None else ty

        args = [argument(arg) for arg in call.args if not isinstance(arg, ast.Starred)]
        kwargs = {keyword.arg: argument(keyword.value) for keyword in call.keywords if keyword.arg}
        return walker, args, kwargs

    def _mutated_arguments(self, function: FunctionInfo) -> list[tuple]:
        """FunctionWalker.mutated_arguments, memoised by body text (it walks the whole body),
        and skipped when the text cannot hold what it looks for."""
        key = ("mutated arguments", function.module.path, function.qualname, function.segment)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = FunctionWalker(self, function, COMPILE, (), (), 0).mutated_arguments() \
                if _may_mutate_arguments(function) else []
        return found

    def class_attributes(self, cls: ClassInfo):
        return class_attributes(self, cls)

    def instance_type(self, walker, cls: ClassInfo, args: list, kwargs: dict, always: bool = False):
        return instance_type(walker, cls, args, kwargs, always)

    def evaluate(self, function: FunctionInfo, mode: str, params: tuple, chain: tuple, depth: int):
        """Walks `function` (or reuses a memoised walk); returns (return type, breaks?, attributes
        it stores)."""
        if function.node is None:  # does not parse (yet): nothing to follow, but its syntax error is reported
            self.deps[id(function)] = (function, function.block)
            return UNKNOWN_OUTCOME
        key = (function.module.path, function.qualname, function.segment, mode, params)
        outcome = self._returns.get(key)
        if outcome is not None:  # walked and collected in this pass already
            return outcome
        if key in self._active or depth > MAX_DEPTH:
            return UNKNOWN_OUTCOME
        evaluation = self.memo.get(key)
        if evaluation is not None and not self._still_valid(evaluation, function, mode, chain, depth):
            evaluation = None
        if evaluation is None:
            self._active.add(key)
            try:
                evaluation = FunctionWalker(self, function, mode, params, chain, depth).run()
            finally:
                self._active.discard(key)
            self.memo[key] = evaluation
        outcome = self._returns[key] = (evaluation.returns, evaluation.breaks, evaluation.stored)
        self._collect(key, evaluation, function, mode, chain, depth)
        return outcome

    def _still_valid(self, evaluation, function: FunctionInfo, mode: str, chain: tuple, depth: int) -> bool:
        # Re-evaluate the callees the cached walk relied on, as they stand now; a callee that
        # moved, vanished, (no longer) parses or returns something else, or an `__init__` whose
        # attribute types it read that changed, means the caller must be walked again.
        for read, text in evaluation.reads:
            current = self.workspace.current_function(read)
            if current is None or current.block.text != text:
                return False
        for callee, params, rel_span, outcome in evaluation.observations:
            current = self._current(callee, params)
            if current is None:
                return False
            callee, params = current
            if params is None:  # it did not parse then
                if callee.node is not None:
                    return False
                continue
            if self.evaluate(callee, mode, params, chain + ((function, rel_span),), depth + 1) != outcome:
                return False
        return True

    def _current(self, callee: FunctionInfo, params: tuple | None):
        function = self.workspace.current_function(callee)
        if function is None:
            return None
        if params is None:
            return function, None
        refreshed = []
        for ty in params:
            if isinstance(ty, K.Ty) and isinstance(ty.ref, ClassInfo):
                cls = self.workspace.current_class(ty.ref)
                if cls is None:
                    return None
                if cls is not ty.ref:
                    ty = ty.but(ref=cls)
            refreshed.append(ty)
        return function, tuple(refreshed)

    def _collect(self, key, evaluation, function: FunctionInfo, mode: str, chain: tuple, depth: int) -> None:
        """Adds the walk's findings and dependencies to this pass, then its callees'."""
        if key in self._collected:
            return
        self._collected.add(key)
        self.deps[id(function)] = (function, function.block)
        for read, _text in evaluation.reads:
            read = self.workspace.current_function(read) or read
            self.deps[id(read)] = (read, read.block)
        for code, rel, message, fix in evaluation.findings:
            self.findings.append((function, chain, code, rel, message, fix))
        self._guarded |= evaluation.guarded_attributes
        self._stores.extend((function, chain, store) for store in evaluation.attribute_stores)
        for callee, params, rel_span, _outcome in evaluation.observations:
            current = self._current(callee, params)
            if current is None:
                continue
            callee, params = current
            if params is None:  # does not parse: its syntax error is reported, as a fresh walk's
                self.deps[id(callee)] = (callee, callee.block)
            else:
                self.evaluate(callee, mode, params, chain + ((function, rel_span),), depth + 1)


_MUTATION = rf"(?:\.{GAP}(?:{'|'.join(sorted(CONTAINER_MUTATORS))})\b|\[{GAP}[rRuU]?['\"])"


def _may_mutate_arguments(function: FunctionInfo) -> bool:
    """A parameter before `.append`-like methods or a `["key"]` subscript, or one annotated as
    a container (then any subscript store counts): what mutated_arguments looks for."""
    node = function.node
    for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
        annotation = arg.annotation.value if isinstance(arg.annotation, ast.Subscript) else arg.annotation
        name = function.module.dotted(annotation) if annotation is not None else None
        if name is not None and name.rsplit(".", 1)[-1] in CONTAINER_ANNOTATIONS:
            return True
    return may_use(function.block.text, argument_names(node), _MUTATION)


def function_base_line(function: FunctionInfo) -> int:
    """Absolute line of the def (relative spans are measured from here)."""
    return function.node.lineno + function.block.first_line - 1


def merge_findings(results, config, merged: dict | None = None) -> dict:
    """(path, line, code) → Finding over root results in order (the first root to reach a
    finding gives its chain), with the settings and `# fuselens: ignore` comments applied.
    Positions are computed now, so a result stays valid when lines above it move."""
    merged = {} if merged is None else merged
    for result in results:
        for function, chain, code, rel, message, fix in result.findings:
            base = function_base_line(function)
            line = rel.line + base
            path = function.module.path
            key = (path, line, code)
            if key in merged or not config.enabled(code):
                continue
            ignored = function.module.ignores.get(line, False)
            if ignored is None or (ignored and code in ignored):
                continue
            merged[key] = Finding(code, path, Span(line, rel.column, rel.end_line + base, rel.end_column), message,
                                  function.qualname, _chain(chain), _rebase_fix(fix, base))
    return merged


def _chain(chain: tuple) -> tuple:
    sites = []
    for caller, rel in chain:
        base = function_base_line(caller)
        sites.append(CallSite(caller.module.path, Span(rel.line + base, rel.column, rel.end_line + base,
                                                       rel.end_column), caller.qualname))
    return tuple(sites)


def _rebase_fix(fix, base: int):
    if fix is None:
        return None
    edits = tuple(type(edit)(Span(edit.span.line + base, edit.span.column, edit.span.end_line + base,
                                  edit.span.end_column), edit.new_text) for edit in fix.edits)
    return Fix(fix.title, edits)
