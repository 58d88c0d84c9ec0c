"""What a module defines: imports, functions, classes, globals, compile roots.

Built from the parsed blocks without looking inside function bodies, except in blocks
whose text mentions a compile entry point (`compile(`, `jit.trace`, `export(` ...), so
building it stays cheap on large files.
"""
from __future__ import annotations

import ast
import functools
import keyword
import re
import textwrap
from dataclasses import dataclass, field
from typing import Callable

from .kinds import CLASS, FUNC, OBJ, Ty
from .source import Block

COMPILE = "compile"  # torch.compile / model.compile(): graph-break and recompile rules
TRACE = "trace"      # torch.jit.trace: trace-unsafe rules
EXPORT = "export"    # torch.export.export: trace-unsafe rules
SCRIPT = "script"    # torch.jit.script: TorchScript compiles control flow; no break rules

ROOT_CALLS = {
    "torch.compile": COMPILE,
    "torch.jit.trace": TRACE,
    "torch.jit.trace_module": TRACE,
    "torch.jit.script": SCRIPT,
    "torch.export.export": EXPORT,
    "torch.export": EXPORT,
}
DISABLE_CALLS = {"torch.compiler.disable", "torch._dynamo.disable"}
MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
# Names under these packages are never workspace code; resolving them needs no file lookups.
EXTERNAL_PREFIXES = ("torch.", "numpy.", "np.", "math.", "logging.", "warnings.", "sys.", "os.", "time.",
                     "random.", "copy.", "typing.", "collections.", "functools.", "itertools.", "einops.",
                     "transformers.", "datetime.", "uuid.", "inspect.", "dataclasses.", "abc.", "enum.")

_MISSING = object()
_ROOT_HINT = re.compile(r"compile\(|jit\.|export\(|disable\(|optimize\(")
_IGNORE = re.compile(r"#\s*fuselens:\s*ignore(?:\[([^\]]*)\])?", re.I)


# FunctionInfo and ClassInfo compare by identity (memo keys hold them in parameter types):
# an edit inside function bodies keeps them (edits.py), a rebuilt index makes new ones.
@dataclass(eq=False)
class FunctionInfo:
    qualname: str
    block: Block
    module: "ModuleIndex"
    cls: "ClassInfo | None" = None
    disabled: bool = False
    _node: ast.FunctionDef | ast.AsyncFunctionDef | None = None  # parsed on first use
    _segment: tuple | None = None

    @property
    def node(self):
        """The def, parsed from its block on first use; None if it does not parse."""
        if self._node is None:
            self._node = self.block.function_node()
        return self._node

    @property
    def segment(self) -> tuple:
        """What identifies the body for the memo: its block's text (a method has a block of
        its own) and where in that block the def sits."""
        if self._segment is None:
            node = self.node
            self._segment = (self.block.text, node.lineno, node.col_offset)
        return self._segment

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]



@dataclass(eq=False)
class ClassInfo:
    name: str
    block: Block
    module: "ModuleIndex"
    bases: list[str] = field(default_factory=list)  # resolved dotted names, or local names
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    _is_module: bool | None = None
    attributes: tuple | None = None  # (epoch, generation, types of self.<name>, __init__s read): attributes.py
    # A lazily indexed class: one block per def member of its outline, in order.
    member_blocks: list[Block] = field(default_factory=list)
    # Statements of the class body other than defs (dataclass fields, class attributes):
    # parsed nodes, or the outline's texts until `field_statements` parses them.
    fields: list = field(default_factory=list)

    def field_statements(self) -> list[ast.stmt]:
        if any(isinstance(item, str) for item in self.fields):
            statements = []
            for item in self.fields:
                if isinstance(item, str):
                    try:
                        statements.extend(ast.parse(textwrap.dedent(item)).body)
                    except (SyntaxError, ValueError, RecursionError, MemoryError):
                        pass
                else:
                    statements.append(item)
            self.fields = statements
        return self.fields

    def lookup_method(self, name: str, seen=None) -> FunctionInfo | None:
        if name in self.methods:
            return self.methods[name]
        seen = seen or set()
        for base in self.module.base_classes(self):
            if base not in seen:
                seen.add(base)
                found = base.lookup_method(name, seen)
                if found:
                    return found
        return None

    @property
    def is_module(self) -> bool:
        """nn.Module subclass. An unresolvable external base (e.g. a Hugging Face
        PreTrainedModel) counts when the class defines forward."""
        if self._is_module is None:
            self._is_module = False  # breaks cycles
            result = False
            for base in self.bases:
                if base in MODULE_BASES:
                    result = True
                elif base in self.module.classes:
                    result = result or self.module.classes[base].is_module
                else:
                    target = self.module.resolve_class(base)
                    if target is not None:
                        result = result or target.is_module
                    elif base not in ("object", "") and "forward" in self.methods and not base.startswith(
                            ("typing.", "enum.", "abc.", "collections.", "dataclasses.", "builtins.")):
                        result = True
            self._is_module = result
        return self._is_module


@dataclass(frozen=True)
class Root:
    mode: str
    function: FunctionInfo
    # The class whose instance is `self`, when it only inherits `function` (a subclass that
    # overrides the methods its base's forward calls): the pass dispatches on it.
    owner: "ClassInfo | None" = None
    # A trace/export root: how many positional example inputs the call gives (the parameters
    # after those keep their defaults while tracing); None when unknown or not a trace root.
    passed: int | None = None
    # A module-level construction of the class that hands it code (`Net(hooks=[log_stats])`), or
    # call of the compiled function that does (`evaluate(x, callbacks=[log])`): (path of its
    # module, the call, ((name, value), ...)); `self` is that instance, or the parameters are those
    # arguments. The pairs are what the enclosing function bound the call's plain-name arguments
    # to (`det_cfg, rec_cfg = DetConfig(), EDGE_REC_CFG`), where it binds them once. For a
    # trace/export root, a fourth part: ((name, training), ...) for modules the enclosing function
    # put in eval or training mode (`model.eval()`); the name "" is the traced instance itself.
    site: "tuple | None" = None


@dataclass(eq=False)
class ModuleIndex:
    path: str
    name: str  # dotted module name within the workspace ("" when unknown)
    text: str
    blocks: list[Block]
    workspace: object = None  # the Workspace that resolves cross-file imports
    imports: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    globals: dict[str, ast.expr] = field(default_factory=dict)
    mutated_globals: set[str] = field(default_factory=set)  # reassigned by some `global` statement
    disabled_names: set[str] = field(default_factory=set)
    roots: list[Root] = field(default_factory=list)
    ignores: dict[int, frozenset[str] | None] = field(default_factory=dict)
    # Blocks parsed to build the index or to find its roots (whatever analyses run later):
    # their syntax errors are always reported.
    eager: list[Block] = field(default_factory=list)
    # Changes whenever anything but a function body changes (imports, globals, signatures,
    # decorators, __init__): the Workspace starts a new epoch then.
    interface_key: int = 0
    _compiled_roots: tuple | None = None  # (assume_modules_compiled, roots)
    _constructions: dict | None = None  # id(ClassInfo) → module-level calls handing it code
    _name_types: dict = field(default_factory=dict)
    candidates: list[Block] = field(default_factory=list)  # forwards parsed to see whether they are roots

    def roots_with_modules(self, config) -> list[Root]:
        """Declared roots, plus every nn.Module subclass's forward when the settings say
        modules are compiled (the usual `torch.compile(model)`)."""
        if self._compiled_roots is not None and self._compiled_roots[0] == config.assume_modules_compiled:
            return self._compiled_roots[1]
        roots = list(self.roots)
        self.candidates = []
        if config.assume_modules_compiled:
            declared = set(roots)
            for cls in self.classes.values():
                forward = cls.lookup_method("forward")
                if forward is None or not cls.is_module:
                    continue
                root = _module_root(COMPILE, cls, forward)
                if root not in declared:
                    if forward.module is self:
                        self.candidates.append(forward.block)
                    if forward.node is not None:
                        roots.append(root)
                        roots.extend(_module_root(COMPILE, cls, forward, site=(self.path, call, ()))
                                     for call in self.constructions_handing_code(cls))
        compiled = {root.function.name: root.function for root in self.roots
                    if root.mode == COMPILE and root.function.cls is None and root.function.module is self}
        roots.extend(Root(COMPILE, compiled[call.func.id], site=(self.path, call, ()))
                     for call in self.calls_handing_code(compiled))  # `evaluate(x, callbacks=[log_metric])`
        self._compiled_roots = (config.assume_modules_compiled, roots)
        return roots

    def calls_handing_code(self, functions: dict) -> list[ast.Call]:
        """Calls, in module-level code and in the blocks that declare roots, of the compiled
        `functions` (by name) with an argument that names a function or class of this module:
        the code each is handed runs inside it. One walk, of the blocks that name one of them."""
        if not functions:
            return []
        named = re.compile(r"\b(?:%s)\s*\(" % "|".join(map(re.escape, functions)))
        return [node for block in self.eager if named.search(block.text) for statement in block.statements
                for node in ast.walk(statement)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions
                and any(map(self._hands_code, [*node.args, *node.keywords]))]

    def constructions_handing_code(self, cls: "ClassInfo") -> list[ast.Call]:
        """Module-level calls of `cls` with an argument that names a function or class of this
        module (`CASES = {"m": lambda: (Net(hooks=[log_stats]), ...)}`, `model = Net(attn=Local)`)."""
        if self._constructions is None:
            self._constructions = {}
            for value in self.globals.values():
                for node in ast.walk(value):
                    if isinstance(node, ast.Call) and any(map(self._hands_code, [*node.args, *node.keywords])):
                        target = self.resolve_class(self.dotted(node.func) or "")
                        if target is not None:
                            self._constructions.setdefault(id(target), []).append(node)
        return self._constructions.get(id(cls), [])

    def _hands_code(self, argument: ast.expr) -> bool:
        """Names a class of this module, or passes one of its functions (not a call's result)."""
        called = {id(node.func) for node in ast.walk(argument) if isinstance(node, ast.Call)}
        return any(isinstance(node, ast.Name) and (node.id in self.classes or node.id in self.functions
                                                    and id(node) not in called) for node in ast.walk(argument))

    def body_effects(self) -> tuple:
        """What function bodies decide for other functions' walks, so part of the interface:
        which functions are disabled (`torch.compiler.disable(f)` may sit in any body) and
        which globals a `global` statement reassigns."""
        functions = [*self.functions.values(), *(m for c in self.classes.values() for m in c.methods.values())]
        return (frozenset(f.qualname for f in functions if f.disabled), frozenset(self.disabled_names),
                frozenset(self.mutated_globals))

    # --- name resolution -------------------------------------------------------------------
    def name_type(self, name: str):
        """The type of a module-level name that is a function, a class or an import (not
        shadowed by a global); None otherwise. Cached: walks look these up all the time, and
        an index keeps its functions, classes and imports as long as it lives."""
        ty = self._name_types.get(name, _MISSING)
        if ty is _MISSING:
            ty = None
            if name in self.functions:
                ty = Ty(FUNC, ref=self.functions[name])
            elif name in self.classes:
                ty = Ty(CLASS, ref=self.classes[name])
            elif name in self.imports and name not in self.globals:
                ty = Ty(OBJ, ref=self.imports[name])
            self._name_types[name] = ty
        return ty

    def dotted(self, node: ast.expr) -> str | None:
        """`F.relu` → "torch.nn.functional.relu"; a local def → its own name."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.imports.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])

    def base_classes(self, cls: ClassInfo) -> list[ClassInfo]:
        result = []
        for base in cls.bases:
            target = self.classes.get(base) or self.resolve_class(base)
            if target is not None:
                result.append(target)
        return result

    def resolve_class(self, dotted: str) -> ClassInfo | None:
        if dotted in self.classes:
            return self.classes[dotted]
        if self.workspace is not None:
            symbol = self.workspace.resolve_symbol(dotted, self)
            if isinstance(symbol, ClassInfo):
                return symbol
        return None

    def resolve_function(self, dotted: str) -> FunctionInfo | None:
        if dotted in self.functions:
            return self.functions[dotted]
        if self.workspace is not None:
            symbol = self.workspace.resolve_symbol(dotted, self)
            if isinstance(symbol, FunctionInfo):
                return symbol
        return None

    def is_disabled_name(self, dotted: str) -> bool:
        if dotted in self.disabled_names:
            return True
        function = self.resolve_function(dotted) if "." in dotted else None
        return bool(function and function.disabled)


def build_index(path: str, module_name: str, text: str, blocks: list[Block], workspace=None) -> ModuleIndex:
    index = ModuleIndex(path, module_name, text, blocks, workspace)
    index.ignores = _ignore_comments(text)
    for block in blocks:
        outline = block.outline if block.lazy else None
        if outline is not None and outline.kind == "def":
            info = FunctionInfo(outline.name, block, index)
            index.functions[outline.name] = info
            if outline.decorated:
                _apply_decorators(index, info, block, outline.header)
        elif outline is not None and outline.kind == "class":
            _index_lazy_class(index, block, outline)
        else:
            index.eager.append(block)
            for statement in block.statements:
                _index_statement(index, block, statement)
    for block in blocks:
        if "global " in block.text:
            for names in _GLOBAL.findall(block.text):
                index.mutated_globals.update(name.strip() for name in names.split(","))
        if _ROOT_HINT.search(block.text):
            index.eager.append(block)
            for statement in block.statements:
                _find_root_calls(index, block, statement)
    index.eager = list(dict.fromkeys(index.eager))
    return index


def _index_statement(index: ModuleIndex, block: Block, node: ast.stmt) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                index.imports[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                index.imports[top] = top
    elif isinstance(node, ast.ImportFrom):
        base = _absolute_module(index.name, node.module, node.level)
        for alias in node.names:
            if alias.name != "*":
                index.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        info = FunctionInfo(node.name, block, index, _node=node)
        index.functions[node.name] = info
        _apply_decorators(index, info, block)
    elif isinstance(node, ast.ClassDef):
        cls = ClassInfo(node.name, block, index, bases=[index.dotted(base) or "" for base in node.bases])
        index.classes[node.name] = cls
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                method = FunctionInfo(f"{node.name}.{item.name}", block, index, cls, _node=item)
                cls.methods[item.name] = method
                _apply_decorators(index, method, block)
            else:
                cls.fields.append(item)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        bound = [(target, node.value) for target in targets]
        for target, value in bound:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                bound.extend(zip(target.elts, value.elts))  # `STEPS, BEATS = 4, 4`
            elif isinstance(target, ast.Name):
                if target.id in index.globals:
                    index.mutated_globals.add(target.id)
                index.globals[target.id] = value
    elif isinstance(node, (ast.If, ast.Try)):
        # `try: import x except ImportError: ...` and `if TYPE_CHECKING:` still bind names.
        for child in [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                      *(s for h in getattr(node, "handlers", []) for s in h.body)]:
            _index_statement(index, block, child)


_GLOBAL = re.compile(r"^[ \t]*global[ \t]+([\w, \t]+)", re.M)
_header_bases_cache: dict[str, list] = {}
# `class Name(a.b, c):` on one line, no decorators: the usual header needs no parse.
_SIMPLE_CLASS = re.compile(r"class[ \t]+([^\W\d]\w*)[ \t]*(?:\(([\w. \t,]*)\))?[ \t]*:")
_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def _index_lazy_class(index: ModuleIndex, block: Block, outline) -> None:
    """A class from its outline: bases from the header, one lazily parsed block per method."""
    bases = _header_bases_cache.get(outline.header)
    if bases is None:
        bases = _simple_bases(outline.header)
        if bases is None:
            try:
                node = ast.parse(outline.header.lstrip() + "\n    pass").body[0]
                bases = node.bases if isinstance(node, ast.ClassDef) else []
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                bases = []
        if len(_header_bases_cache) > 20000:
            _header_bases_cache.clear()
        _header_bases_cache[outline.header] = bases
    cls = ClassInfo(outline.name, block, index, bases=[_base_name(index, base) for base in bases])
    index.classes[outline.name] = cls
    for member in outline.members:
        if member.kind == "def":
            add_method(index, cls, member, member_block(block, member))
        elif ":" in member.text or "=" in member.text:  # not a docstring or `pass`
            cls.fields.append(member.text)


def _simple_bases(header: str) -> list[str] | None:
    """The bases of a one-line `class` header naming them by dotted names, as written; None
    for any other header (it is parsed)."""
    match = _SIMPLE_CLASS.fullmatch(header)
    if match is None or keyword.iskeyword(match.group(1)):
        return None
    names = [name.strip() for name in (match.group(2) or "").split(",")]
    if names[-1] == "":
        names.pop()  # `class A(B,):` or `class A():`
    for name in names:
        if _DOTTED.fullmatch(name) is None or any(keyword.iskeyword(part) for part in name.split(".")):
            return None
    return names


def _base_name(index: ModuleIndex, base) -> str:
    if isinstance(base, str):
        head, dot, rest = base.partition(".")
        return index.imports.get(head, head) + dot + rest
    return index.dotted(base) or ""


def member_block(block: Block, member) -> Block:
    """A method of a lazily indexed class as a block of its own (wrapped in `class _:` to keep
    its indentation valid), parsed on first use."""
    return Block("class _:\n" + member.text, block.first_line + member.first_line - 2)


def add_method(index: ModuleIndex, cls: ClassInfo, member, block: Block) -> None:
    cls.member_blocks.append(block)
    method = FunctionInfo(f"{cls.name}.{member.name}", block, index, cls)
    cls.methods[member.name] = method
    if member.decorated:
        _apply_decorators(index, method, block, member.header)


def _absolute_module(current: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = current.split(".") if current else []
    base = parts[: len(parts) - level] if level <= len(parts) else []
    return ".".join([*base, module] if module else base)


def _apply_decorators(index: ModuleIndex, info: FunctionInfo, block: Block, header: str | None = None) -> None:
    """Roots and disabled functions from a def's decorators: read from its outline `header`
    when that parses on its own, else from the parsed block."""
    decorators = header_decorators(header) if header is not None else None
    if decorators is None:
        index.eager.append(block)  # parsed now, whatever analyses follow: its syntax errors count
        if info.node is None:
            return
        decorators = info.node.decorator_list
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = index.dotted(target)
        if name in DISABLE_CALLS:
            info.disabled = True
        elif name in ROOT_CALLS and name != "torch.export.export":
            index.roots.append(Root(ROOT_CALLS[name], info))


_decorators_cache: dict[str, list | None] = {}


def header_decorators(header: str) -> list[ast.expr] | None:
    """The decorators of a def from its header alone (decorators and signature, as outlines
    give it), or None when that does not parse on its own. Reading them so needs no parse
    of the body: a `@property` or `@torch.no_grad()` function is parsed only if reached."""
    if header in _decorators_cache:
        return _decorators_cache[header]
    lines = header.splitlines()
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    text = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines)
    try:
        node = ast.parse(text + "\n    pass\n").body
        decorators = node[0].decorator_list if len(node) == 1 and isinstance(
            node[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        decorators = None
    if len(_decorators_cache) > 20000:
        _decorators_cache.clear()
    _decorators_cache[header] = decorators
    return decorators


# nn.Module methods that return the module itself: `torch.jit.trace(Net().eval(), x)` traces a Net.
_SELF_RETURNING = {"eval", "train", "to", "cpu", "cuda", "float", "half", "double", "bfloat16", "requires_grad_"}


def module_itself(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SELF_RETURNING:
        node = node.func.value
    return node


def training_set(call: ast.expr) -> bool | None:
    """The mode `X.eval()` / `X.train(flag)` leaves a module in (None for other expressions)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    if call.func.attr == "eval" and not call.args:
        return False
    if call.func.attr == "train":
        flag = call.args[0] if call.args else ast.Constant(True)
        return flag.value if isinstance(flag, ast.Constant) and isinstance(flag.value, bool) else None
    return None


def chain_training(node: ast.expr) -> bool | None:
    """The mode a chain like `Net(cfg).train().eval().to(device)` leaves the module in: the last
    eval/train call of it decides."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SELF_RETURNING:
        mode = training_set(node)
        if mode is not None:
            return mode
        node = node.func.value
    return None


def _training_modes(function: ast.AST) -> dict[str, bool]:
    """Locals `function` puts in one mode, as a statement (`model.eval()`) or when it builds them
    (`model = Net().eval()`); a name set both ways is left out."""
    modes: dict[str, set] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            mode = training_set(node)
            if mode is not None:
                modes.setdefault(node.func.value.id, set()).add(mode)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            mode = chain_training(node.value)
            if mode is not None:
                modes.setdefault(node.targets[0].id, set()).add(mode)
    return {name: values.pop() for name, values in modes.items() if len(values) == 1}


def _find_root_calls(index: ModuleIndex, block: Block, statement: ast.stmt) -> None:
    """Finds `torch.compile(fn)`, `torch.jit.trace(model, ...)`, `model.compile()`, and
    `g = torch.compiler.disable(f)` anywhere in the block."""
    # Instances bound in the same scope: `model = Net(); opt = torch.compile(model)`: name →
    # (class name, the call that builds it).
    instances: dict[str, tuple[str, ast.Call]] = {}
    in_function = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
    bound_once = functools.cache(lambda: _bound_once(statement) if in_function else {})
    training_modes = functools.cache(lambda: _training_modes(statement) if in_function else {})
    calls = []  # one walk: big functions mention `compile(` too (torch/_dynamo/convert_frame.py)
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Assign) and isinstance(module_itself(node.value), ast.Call) \
                and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            call = module_itself(node.value)
            callee = index.dotted(call.func)
            if callee and (callee in index.classes or index.resolve_class(callee)):
                instances[node.targets[0].id] = (callee, call)
    for node in calls:
        callee = index.dotted(node.func)
        if callee in DISABLE_CALLS and node.args:
            disabled = index.dotted(node.args[0])
            function = index.resolve_function(disabled) if disabled else None
            if function is not None:
                function.disabled = True
            parent_target = _assigned_name(statement, node)
            if parent_target:
                index.disabled_names.add(parent_target)
            continue
        mode = ROOT_CALLS.get(callee or "")
        if mode is None and isinstance(node.func, ast.Call) and index.dotted(node.func.func) == "torch._dynamo.optimize":
            mode = COMPILE
        if mode is None and isinstance(node.func, ast.Attribute) and node.func.attr == "compile" \
                and not node.args and isinstance(node.func.value, ast.Name) and node.func.value.id in instances:
            _add_module_root(index, *instances[node.func.value.id], bound_once, COMPILE)
            continue
        if mode is None or not node.args:
            continue
        passed = _example_count(node) if mode != COMPILE else None
        # a trace runs the module in the mode it is in then (compiled code recompiles when it changes)
        modes = training_modes if mode != COMPILE else None
        subject = module_itself(node.args[0])
        if isinstance(subject, ast.Call):
            class_name = index.dotted(subject.func)
            if class_name:
                _add_module_root(index, class_name, subject, bound_once, mode, passed, modes,
                                 chain_training(node.args[0]))
            continue
        name = index.dotted(subject)
        if name is None:
            continue
        owner = name.rsplit(".", 1)[0].split(".")[-1] if name.endswith(".forward") else name
        if owner in instances:
            _add_module_root(index, *instances[owner], bound_once, mode, passed, modes,
                             modes and modes().get(owner))
        else:
            function = index.resolve_function(name)
            if function is not None:
                index.roots.append(Root(mode, function, passed=passed))
            else:
                _add_module_root(index, name, None, None, mode, passed)


def _example_count(call: ast.Call) -> int | None:
    """`torch.jit.trace(model, (x, lengths))` → 2; `torch.jit.trace(model, x)` → 1. A starred
    part (`(chunk, *state)`) is taken to fill required parameters only: the count is of the rest."""
    example = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg in ("example_inputs", "args")), None)
    if example is None:
        return None
    if isinstance(example, (ast.Tuple, ast.List)):
        return sum(not isinstance(e, ast.Starred) for e in example.elts)
    return 1 if isinstance(example, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) else None


def _add_module_root(index: ModuleIndex, class_name: str, construction: ast.Call | None,
                     bound_once: Callable | None, mode: str, passed: int | None = None,
                     training_modes: Callable | None = None, training: bool | None = None) -> None:
    """The forward of `class_name`; `self` is the instance `construction` builds, when known;
    `training_modes` (trace/export roots) gives the modes the enclosing function set."""
    cls = index.resolve_class(class_name)
    if cls is not None:
        forward = cls.lookup_method("forward")
        if forward is not None:
            site = None
            if construction is not None:
                names = [arg.id for arg in (*construction.args, *(k.value for k in construction.keywords))
                         if isinstance(arg, ast.Name)]
                bound = bound_once() if names else {}
                site = (index.path, construction, tuple((name, bound[name]) for name in names if name in bound))
                if training_modes is not None:
                    set_modes = training_modes() if names else {}
                    site += (tuple([("", training)] if training is not None else [])
                             + tuple((name, set_modes[name]) for name in names if name in set_modes),)
            index.roots.append(_module_root(mode, cls, forward, passed, site))


def _module_root(mode: str, cls: ClassInfo, forward: FunctionInfo, passed: int | None = None, site=None) -> Root:
    return Root(mode, forward, None if forward.cls is cls else cls, passed, site)


def _bound_once(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """Locals of `function` it binds exactly once, by a plain assignment: name → value
    (`a, b = X(), Y` binds both)."""
    stores: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name):
                values[target.id] = value
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                    and len(target.elts) == len(value.elts):
                values.update((t.id, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name))
    for arg in ast.walk(function.args):
        if isinstance(arg, ast.arg):
            stores[arg.arg] = 2  # a parameter: bound by each call
    return {name: value for name, value in values.items() if stores.get(name) == 1}


def _assigned_name(statement: ast.stmt, call: ast.Call) -> str | None:
    for node in ast.walk(statement):
        if isinstance(node, ast.Assign) and node.value is call and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
    return None


def _ignore_comments(text: str) -> dict[int, frozenset[str] | None]:
    if "fuselens" not in text:
        return {}
    result: dict[int, frozenset[str] | None] = {}
    for match in _IGNORE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        codes = match.group(1)
        result[line] = frozenset(c.strip().upper() for c in codes.split(",") if c.strip()) if codes else None
    return result
