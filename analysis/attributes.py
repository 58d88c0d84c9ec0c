"""Types of `self.<name>`, learned from `__init__` (and the workspace base classes' ones).

Cached on the ClassInfo, so the cache lives exactly as long as the index it belongs to (a
module-level cache keyed by names handed out ClassInfo references of an earlier text),
stamped with the Workspace's interface epoch (a base class in another file can change
while this ClassInfo stays) and its generation (after any edit, the `__init__`s read are
checked once: an edit inside `__init__` recomputes only the classes that read it).
"""
from __future__ import annotations

import ast
import re

from . import kinds as K
from .checker import MAX_DEPTH, FunctionWalker, constant_type
from .index import ClassInfo, FunctionInfo
from .kinds import Ty
from .params import annotation_type, args_with_defaults, bind_parameters, parameter_type

_WEIGHTED_BASES = {"torch.nn.Linear", "torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Embedding",
                   "torch.nn.LayerNorm"}


def class_attributes(analysis, cls: ClassInfo) -> tuple[dict[str, Ty], list[tuple]]:
    """(attribute types, (`__init__`, its block's text) of each one read to learn them)."""
    record = cls.attributes
    if record is not None and record[0] == analysis.epoch and (
            record[1] == analysis.generation or _unchanged(analysis, record[3])):
        cls.attributes = (analysis.epoch, analysis.generation, record[2], record[3])
        return record[2], record[3]
    attrs: dict[str, Ty] = {}
    reads: list[tuple] = []
    # Set first: a recursion guard for self-referencing classes.
    cls.attributes = (analysis.epoch, analysis.generation, attrs, reads)
    for base in reversed(cls.module.base_classes(cls)):
        base_attrs, base_reads = class_attributes(analysis, base)
        attrs.update(base_attrs)
        reads.extend(base_reads)
    if set(cls.bases) & _WEIGHTED_BASES:
        attrs.update({"weight": K.T_TENSOR, "bias": K.T_TENSOR.but(optional=True)})
    attrs.update(_field_types(cls))
    inherited = next(filter(None, (base.lookup_method("__init__") for base in cls.module.base_classes(cls))), None)
    if inherited is not None and inherited.node is not None and _calls_overrides(inherited, cls):
        # SRNet.__init__ stores `self.body = self.build_body(cfg)`: for a subclass overriding
        # build_body, the body is what the override builds
        attrs.update(_walk_init(analysis, inherited, reads, Ty(K.MODULE if cls.is_module else K.OBJ, ref=cls)).attributes)
    init = cls.methods.get("__init__")
    if init is not None:
        if init.node is not None:
            attrs.update(_walk_init(analysis, init, reads).attributes)
        else:
            reads.append((init, init.block.text))  # look again once it parses
    reads[:] = dict.fromkeys(reads)
    return attrs, reads


_SELF_CALL = re.compile(r"\bself\.(\w+)\(")


def _calls_overrides(init: FunctionInfo, cls: ClassInfo) -> bool:
    """An inherited `__init__` calls, on self, a method `cls` overrides."""
    return any(name in cls.methods for name in _SELF_CALL.findall(init.block.text))


def instance_type(walker, cls: ClassInfo, args: list[Ty], kwargs: dict[str, Ty], always: bool = False) -> Ty:
    """`cls(*args, **kwargs)`. When an argument is code to run (`Compose([Resize(), Flip()])`,
    `Net(callbacks=[Clamp()])`, `Block(attn=Local())`), or `always` (the instance a root runs),
    `__init__` is walked with the arguments to learn what this instance holds; a walk of its
    methods then runs exactly that code."""
    base = Ty(K.MODULE if cls.is_module else K.OBJ, ref=cls)
    init = cls.lookup_method("__init__")
    if init is None:  # a dataclass or NamedTuple: its fields are what the call passes
        settled = _settled_fields(cls, args, kwargs)
        return base.but(attrs=settled) if settled else base
    if init.node is None or init in walker.constructing \
            or not always and not any(K.holds_code(ty) for ty in (*args, *kwargs.values())):
        return base
    instance = _walk_init(walker.analysis, init, walker.result.reads, base, walker.constructing,
                          bind_parameters(init, args, kwargs, base))
    class_attrs, reads = class_attributes(walker.analysis, cls)
    walker.result.reads.extend(reads)
    # Only what differs from any instance's, unless this is the instance a root runs: all it holds
    # then, values it was left at included (FunctionWalker.settled_value folds those).
    own = {name: ty for name, ty in instance.attributes.items() if always or class_attrs.get(name) != ty}
    return base.but(attrs=tuple(sorted(own.items()))) if own else base


def _settled_fields(cls: ClassInfo, args: list[Ty], kwargs: dict[str, Ty]) -> tuple:
    """The fields of a class whose `__init__` is generated from its annotated fields (a
    dataclass, a NamedTuple) that this construction settles: a mode string, a flag, None, or
    code (`RecConfig(seq="conv")` folds `if cfg.seq == "lstm":` in the `__init__` it reaches)."""
    fields = _annotated_fields(cls, set())
    values = dict(zip(fields, args))
    for name, default in fields.items():
        value = values.get(name, kwargs.get(name))
        if value is None and isinstance(default, ast.Constant):
            value = _constant_value(default.value)
        if value is not None and (value.kind == K.NONE or isinstance(value.ref, (K.Literal, bool))
                                  or K.holds_code(value)):
            values[name] = value
        else:
            values.pop(name, None)
    return tuple(sorted(values.items()))


def _annotated_fields(cls: ClassInfo, seen: set) -> dict[str, ast.expr | None]:
    """Field name -> default, in the generated `__init__`'s order (base classes' fields first)."""
    seen.add(cls)
    fields = {}
    for base in cls.module.base_classes(cls):
        if base not in seen:
            fields.update(_annotated_fields(base, seen))
    for statement in cls.field_statements():
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and "ClassVar" not in ast.unparse(statement.annotation):
            fields[statement.target.id] = statement.value
    return fields


def _constant_value(value) -> Ty | None:
    if value is None:
        return K.T_NONE
    if isinstance(value, bool):
        return K.bool_literal(value)
    if isinstance(value, str):
        return K.T_STR.but(ref=K.Literal(value))
    return None


def _walk_init(analysis, init: FunctionInfo, reads: list, self_type: Ty | None = None, visiting=frozenset(),
               params: tuple | None = None) -> "_InitWalker":
    """Walks `init` (or a method it calls on self) for what it stores on self; `init` and the
    other classes' `__init__`s the walk read go to `reads`."""
    walker = _InitWalker(analysis, init, self_type, visiting, params)
    walker.run()
    reads.append((init, init.block.text))
    reads.extend(walker.result.reads)
    return walker


def _unchanged(analysis, reads: list[tuple]) -> bool:
    """Each `__init__` read still stands with the same text (an edit inside one is not an
    interface change: attribute types are recomputed only for the classes that read it)."""
    for function, text in reads:
        current = analysis.workspace.current_function(function)
        if current is None or current.block.text != text:
            return False
    return True


def _field_types(cls: ClassInfo) -> dict[str, Ty]:
    """Class-body fields (`size: int = 16` in a dataclass config, `eps = 1e-6`): by annotation,
    else by literal value."""
    types = {}
    for statement in cls.field_statements():
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            ty = annotation_type(cls.module, statement.annotation)
            if ty.kind == K.UNKNOWN and statement.value is not None:
                ty = constant_type(statement.value)
            types[statement.target.id] = ty
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    types[target.id] = constant_type(statement.value)
    return types


_ATTR = "self."


class _InitWalker(FunctionWalker):
    """Evaluates `__init__` only to learn what `self.<name>` holds."""

    def __init__(self, analysis, function: FunctionInfo, self_type: Ty | None = None, visiting=frozenset(),
                 params: tuple | None = None):
        self_type = self_type or Ty(K.MODULE, ref=function.cls)
        params = params or tuple([self_type] + [
            _unconstructed_parameter(function, arg, default) for arg, default in args_with_defaults(function.node)][1:])
        super().__init__(analysis, function, "init", params, (), MAX_DEPTH)
        self.self_type = self_type
        self.visiting = visiting | {function}
        self.constructing = self.visiting  # no instance walk of an __init__ from inside itself

    def report(self, *args, **kwargs) -> None:
        return  # __init__ runs eagerly; nothing to report

    # What `__init__` stores on self lives in the environment, under names no local can have, so
    # branches merge it like locals: `if cfg.seq == "lstm": self.rnn = nn.LSTM(...) else: ...` is
    # either module.
    @property
    def attributes(self) -> dict[str, Ty]:
        return {name[len(_ATTR):]: ty for name, ty in self.env.items() if name.startswith(_ATTR)}

    def store(self, name: str, value: Ty) -> None:
        self.env[_ATTR + name] = value

    def call_user(self, node, callee, args, kwargs, receiver=None) -> Ty:
        if receiver is not None and callee.node is not None and callee not in self.visiting \
                and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "self":
            # `self.set_timesteps(n)` in __init__: what that method stores on self counts too
            helper = _walk_init(self.analysis, callee, self.result.reads, self.self_type, self.visiting)
            for name, value in helper.attributes.items():
                self.store(name, value)
            if helper.result.returns.kind not in (K.UNKNOWN, K.NONE):  # `self.body = self.build_body(cfg)`
                return helper.result.returns
        if receiver is None and callee.node is not None and not callee.node.decorator_list \
                and callee not in self.visiting and _returns_lambdas(callee.node):
            # `self.reduce = _reduction(name)`, a helper returning lambdas: the functions it returns
            self.result.reads.append((callee, callee.block.text))  # an edit to it recomputes the attributes
            return _quiet_walk(self, callee, bind_parameters(callee, args, kwargs, None)).result.returns
        # other calls are not walked (cost); a helper's return annotation still types the attribute
        if callee.node is not None and callee.node.returns is not None:
            return annotation_type(callee.module, callee.node.returns)
        return K.T_UNKNOWN

    def assign(self, target, value, statement) -> None:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            self.store(target.attr, value)
        else:
            super().assign(target, value, statement)

    def expr_Call(self, node: ast.Call) -> Ty:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("register_buffer", "register_parameter") \
                and isinstance(func.value, ast.Name) and func.value.id == "self" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            value = self.expr(node.args[1]) if len(node.args) > 1 else K.T_TENSOR
            # keep what the value is known to be (a boolean mask buffer indexes by its values)
            self.store(node.args[0].value, value if value.kind == K.TENSOR else K.T_TENSOR if
                       value.kind != K.NONE else K.T_TENSOR.but(optional=True))
            return K.T_NONE
        if isinstance(func, ast.Attribute) and func.attr == "append" and isinstance(func.value, ast.Attribute) \
                and isinstance(func.value.value, ast.Name) and func.value.value.id == "self" and node.args:
            element = self.expr(node.args[0])
            current = self.env.get(_ATTR + func.value.attr)
            empty = current is not None and (current.kind == K.SEQ and not isinstance(current.ref, Ty) or current
                                             == Ty(K.MODULE, ref="torch.nn.ModuleList"))  # `nn.ModuleList()`
            if empty:
                self.store(func.value.attr, K.seq_of(element))
        return super().expr_Call(node)


def _returns_lambdas(node) -> bool:
    return any(isinstance(statement, ast.Return) and statement.value is not None
               and any(isinstance(n, ast.Lambda) for n in ast.walk(statement.value)) for statement in node.body)


def _quiet_walk(walker, callee: FunctionInfo, params: tuple) -> FunctionWalker:
    """`callee` walked for what it returns, reporting nothing (it runs eagerly, in `__init__`)."""
    helper = FunctionWalker(walker.analysis, callee, "init", params, (), MAX_DEPTH)
    helper.quiet += 1
    helper.run()
    return helper


def _unconstructed_parameter(function: FunctionInfo, arg: ast.arg, default) -> Ty:
    """An `__init__` parameter when no construction is seen: `hooks=None` is None, unless its
    annotation names a workspace class (`input_fq: Optional[FakeQuant] = None` is meant to hold one)."""
    ty = parameter_type(function.module, arg, default, guess_tensor=False)
    if isinstance(default, ast.Constant) and default.value is None:
        return ty.but(optional=True) if ty.kind in (K.MODULE, K.OBJ) and isinstance(ty.ref, ClassInfo) else K.T_NONE
    return ty
