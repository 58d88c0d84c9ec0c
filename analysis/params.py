"""Types of a function's parameters: at a compile root (annotations, defaults, names, how
the body uses them) and at a call site (the argument types, bound to the signature)."""
from __future__ import annotations

import ast
import functools
import re

from . import kinds as K
from .index import FunctionInfo, ModuleIndex
from .kinds import Ty

# Parameter names that are hyper-parameters, not tensors, when a root leaves them unannotated.
SCALAR_PARAM_NAMES = {"dim", "axis", "n", "k", "p", "eps", "scale", "temperature", "top_k", "top_p", "steps",
                      "num_steps", "max_len", "max_length", "max_new_tokens", "size", "stride", "padding",
                      "training", "causal", "is_causal", "inplace", "keepdim", "reduction", "mode", "alpha",
                      "beta", "gamma", "momentum", "lr", "weight_decay", "threshold", "iou_threshold",
                      "label_smoothing", "ignore_index", "n_heads", "num_heads", "head_dim", "groups",
                      "dropout", "base", "theta", "seq_len", "offset", "start_pos", "chunk_size",
                      "block_size", "window", "window_size", "kernel_size", "margin", "smoothing", "tau"}
SCALAR_PARAM_PREFIXES = ("num_", "n_", "max_", "min_", "use_", "is_", "return_", "with_", "do_", "has_")
# `opt`, `optimizer`, `g_opt`, `d_optim`, `optimizer_G`, `optimizerD`: an optimizer in practice.
OPTIMIZER_PARAM_NAME = re.compile(r"(?:\w+_)?(?:opt|optim|optimizer)(?:_?[A-Z]|_[a-z])?")
SCHEDULER_PARAM_NAME = re.compile(r"(?:\w+_)?(?:scheduler|sched)")
GENERATOR_PARAM_NAME = re.compile(r"(?:\w+_)?(?:generator|rng)")


def root_parameters(function: FunctionInfo, owner=None, passed: int | None = None) -> tuple:
    """Types of a root's parameters: annotations, defaults, names; otherwise a tensor.
    `self` is an instance of `owner` when given (a subclass inheriting the method). `passed`: a
    trace root's example inputs fill that many parameters; the others keep their defaults."""
    node = function.node
    args = [*node.args.posonlyargs, *node.args.args]
    defaults = [None] * (len(args) - len(node.args.defaults)) + list(node.args.defaults)
    params = []
    method = function.cls is not None and bool(args) and args[0].arg in ("self", "cls")
    for index, (arg, default) in enumerate(zip(args, defaults)):
        if index == 0 and method:
            params.append(Ty(K.MODULE, ref=owner or function.cls))
        elif passed is not None and default is not None and index - method >= passed:
            params.append(_default_type(function, arg, default))
        else:
            params.append(parameter_type(function.module, arg, default, guess_tensor=True))
    for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
        params.append(parameter_type(function.module, arg, default, guess_tensor=True))
    names = [arg.arg for arg in [*args, *node.args.kwonlyargs]]
    guessed = {name for name, ty in zip(names, params) if ty.kind in (K.NUM, K.UNKNOWN) and ty.ref is None}
    if guessed and _may_use(function.block.text, guessed):
        key = (function.segment, frozenset(guessed))
        used = _usage_cache.get(key)
        if used is None:
            if len(_usage_cache) > 20000:
                _usage_cache.clear()
            used = _usage_cache[key] = _used_as_tensors(node, guessed)
        params = [K.T_TENSOR if name in used else ty for name, ty in zip(names, params)]
    return tuple(_dtype_from_name(ty, name) for name, ty in zip(names, params))


# A tensor's dtype is unknown at a root, but its name often tells: `train_mask` is boolean in
# practice (`x[train_mask]` selects, a data-dependent size, where an index tensor would gather),
# `input_ids`/`lengths` integer (`.tolist()` of one reads data Dynamo cannot trace as a float list).
_MASK_NAME = re.compile(r"(?:\w+_)?masks?")
_INDEX_NAME = re.compile(r"(?:\w+_)?(?:ids|idx|indices|index|lengths|lens|labels|tokens|positions)")


def _dtype_from_name(ty: Ty, name: str) -> Ty:
    if ty.kind != K.TENSOR:
        return ty
    if _MASK_NAME.fullmatch(name):
        return ty.but(boolean=True)
    if _INDEX_NAME.fullmatch(name):
        return ty.but(integer=True)
    return ty


# Between the tokens of `p.mean`, `int(p)` or `p[k] = v`: spaces, line breaks, continuations,
# brackets, comments.
GAP = r"(?:[\s\\()]|#[^\n]*)*"


def may_use(text: str, names, after: str) -> bool:
    """Whether one of `names` may stand in `text` right before `after` (a pattern), tokens
    apart: when not, a walk over the whole body (a Python-level ast.walk) looking for such a
    use can be skipped. Matches in strings and comments only cost that walk."""
    return bool(names) and re.search(rf"\b(?:{'|'.join(sorted(names))}){GAP}{after}", text) is not None


def _may_use(text: str, names: set[str]) -> bool:
    """Whether the text could hold a use _used_as_tensors looks for."""
    alternatives = "|".join(sorted(names))
    return may_use(text, names, r"\.") or re.search(
        rf"\b(?:int|float|bool){GAP}\({GAP}(?:{alternatives})\b", text) is not None


def argument_names(node) -> set[str]:
    """The parameters of a def, but `self` and `cls`."""
    return {arg.arg for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]} - {"self", "cls"}


_usage_cache: dict = {}
_TENSOR_ONLY_ATTRS = {"shape", "dtype", "device", "ndim", "size", "dim", "item", "tolist", "numel", "view",
                      "reshape", "sum", "mean", "max", "min", "float", "long", "to", "unsqueeze", "squeeze",
                      "transpose", "permute", "contiguous", "softmax", "exp", "log", "abs", "clamp", "norm",
                      "std", "var", "any", "all", "argmax", "argmin", "expand", "masked_fill", "sigmoid", "tanh",
                      "matmul", "detach", "clone", "cumsum", "flatten", "numpy", "cpu", "cuda", "type_as"}


def _used_as_tensors(node: ast.AST, names: set[str]) -> set[str]:
    """Parameters the body uses like tensors (`p.mean()`, `p.shape`), whatever their names say."""
    used = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and child.value.id in names \
                and child.attr in _TENSOR_ONLY_ATTRS:
            used.add(child.value.id)
        # `int(n)` of a parameter: nobody converts what is already a Python number.
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in (
                "int", "float", "bool") and len(child.args) == 1 and isinstance(child.args[0], ast.Name) \
                and child.args[0].id in names:
            used.add(child.args[0].id)
    return used


def parameter_type(module: ModuleIndex, arg: ast.arg, default, guess_tensor: bool) -> Ty:
    if isinstance(default, ast.Name) and (default.id in module.globals or default.id in module.functions):
        fallback = annotation_type(module, arg.annotation) if arg.annotation is not None else K.T_UNKNOWN
        return Ty(K.UNKNOWN, ref=K.GlobalDefault(default.id, fallback))
    if isinstance(default, (ast.Tuple, ast.List)) and default.elts and all(
            isinstance(e, ast.Name) and e.id in module.functions for e in default.elts):
        # `callbacks=(_check_header,)`: the functions a call that passes none runs
        functions = [Ty(K.FUNC, ref=module.functions[e.id]) for e in default.elts]
        return Ty(K.SEQ, ref=functools.reduce(K.join, functions),
                  items=tuple(functions) if isinstance(default, ast.Tuple) else None)
    if arg.annotation is not None:
        annotated = annotation_type(module, arg.annotation)
        if annotated.kind != K.UNKNOWN:
            return annotated
    if default is not None:
        if isinstance(default, ast.Constant):
            value = default.value
            if value is None:
                if GENERATOR_PARAM_NAME.fullmatch(arg.arg):  # declared to be handed one
                    return K.T_GENERATOR.but(optional=True)
                return K.T_TENSOR.but(optional=True) if guess_tensor else K.T_UNKNOWN
            if isinstance(value, bool):
                return K.T_BOOL
            if isinstance(value, (int, float)):
                return K.T_NUM
            if isinstance(value, str):
                return K.T_STR
        number = _number_expression(module, default)
        if number is not None:  # `steps=BEATS * STEPS_PER_BEAT`
            return K.T_INT if number is int else K.T_NUM
        return K.T_UNKNOWN
    name = arg.arg
    if name in SCALAR_PARAM_NAMES or name.startswith(SCALAR_PARAM_PREFIXES) or name.endswith(
            ("_size", "_dim", "_len", "_idx", "_index", "_threshold", "_eps", "_rate", "_prob")):
        return K.T_NUM
    if name in ("args", "kwargs", "config", "cfg"):
        return K.T_UNKNOWN
    if OPTIMIZER_PARAM_NAME.fullmatch(name):
        return K.T_OPTIMIZER
    if SCHEDULER_PARAM_NAME.fullmatch(name):
        return K.T_LR_SCHEDULER
    return K.T_TENSOR if guess_tensor else K.T_UNKNOWN


def _number_expression(module: ModuleIndex, node: ast.expr, depth: int = 0) -> type | None:
    """int or float for arithmetic on number literals and module constants bound to them."""
    if depth > 8:
        return None
    if isinstance(node, ast.Name) and isinstance(module.globals.get(node.id), ast.expr):
        return _number_expression(module, module.globals[node.id], depth + 1)
    if isinstance(node, ast.Constant):
        return type(node.value) if type(node.value) in (int, float) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _number_expression(module, node.operand, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                                                            ast.Div, ast.Pow)):
        left, right = _number_expression(module, node.left, depth + 1), _number_expression(module, node.right, depth + 1)
        if left is None or right is None:
            return None
        return float if float in (left, right) or isinstance(node.op, ast.Div) else int
    return None


def annotation_type(module: ModuleIndex, node: ast.expr) -> Ty:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return K.T_UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # Tensor | None
        left, right = annotation_type(module, node.left), annotation_type(module, node.right)
        return K.join(left, right)
    if isinstance(node, ast.Subscript):
        outer = module.dotted(node.value) or ""
        if outer.endswith("Optional"):
            return annotation_type(module, node.slice).but(optional=True)
        if outer.endswith(("List", "Tuple", "Sequence", "list", "tuple")):
            inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            return K.seq_of(annotation_type(module, inner))
        if outer.endswith(("Dict", "Mapping", "dict")):  # Dict[str, Tensor]: its keys are Python values
            value = node.slice.elts[1] if isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2 else None
            return Ty(K.DICT, ref=annotation_type(module, value) if value is not None else K.T_UNKNOWN)
        return K.T_UNKNOWN
    if isinstance(node, ast.Constant) and node.value is None:
        return K.T_NONE
    name = module.dotted(node) or ""
    if name in ("torch.Tensor", "Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return K.T_TENSOR
    if name in ("list", "tuple", "typing.List", "typing.Tuple", "typing.Sequence", "collections.abc.Sequence"):
        return K.seq_of(K.T_UNKNOWN)
    if name in ("dict", "typing.Dict", "typing.Mapping", "collections.abc.Mapping"):
        return Ty(K.DICT, ref=K.T_UNKNOWN)
    if name == "int":
        return K.T_INT
    if name in ("float", "complex"):
        return K.T_NUM
    if name == "torch.Generator":
        return K.T_GENERATOR
    if name == "random.Random" or name in ("datetime.datetime", "datetime.date", "datetime.time"):
        return Ty(K.OBJ, ref=name)
    if name in ("numpy.random.RandomState", "numpy.random.Generator"):
        return K.T_NUMPY_GENERATOR
    if name == "numpy.ndarray":
        return K.T_NDARRAY
    alias = module.globals.get(name)
    if isinstance(alias, (ast.Name, ast.Attribute)) and module.dotted(alias) not in module.globals:
        return annotation_type(module, alias)  # `EdgeIndex = torch.Tensor` (one step: no alias loops)
    if name == "bool":
        return K.T_BOOL
    if name == "str":
        return K.T_STR
    if K.is_training_object(name):  # torch.optim.Optimizer, torch.amp.GradScaler, an LR scheduler
        return Ty(K.OBJ, ref=name)
    if name in ("torch.dtype",):
        return K.T_DTYPE
    if name in ("torch.device",):
        return K.T_DEVICE
    cls = module.resolve_class(name) if name else None
    if cls is not None:
        return Ty(K.MODULE if cls.is_module else K.OBJ, ref=cls)
    if name.startswith("torch.nn.") and name.count(".") == 2 and name[9:10].isupper():
        return Ty(K.MODULE, ref=name)  # `def _norm(...) -> nn.GroupNorm`
    return K.T_UNKNOWN


def bind_parameters(callee: FunctionInfo, args: list[Ty], kwargs: dict[str, Ty], receiver: Ty | None) -> tuple:
    node = callee.node
    positional = [*node.args.posonlyargs, *node.args.args]
    defaults = [None] * (len(positional) - len(node.args.defaults)) + list(node.args.defaults)
    values = list(args)
    if receiver is not None:
        values.insert(0, receiver)
    params = []
    for index, (arg, default) in enumerate(zip(positional, defaults)):
        if index < len(values):
            ty = values[index]
        elif arg.arg in kwargs:
            ty = kwargs[arg.arg]
        else:
            ty = _default_type(callee, arg, default)
        if ty.kind == K.UNKNOWN and arg.annotation is not None:
            ty = annotation_type(callee.module, arg.annotation)
        params.append(ty)
    for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
        ty = kwargs.get(arg.arg)
        if ty is None:
            ty = _default_type(callee, arg, default)
        params.append(ty)
    if node.args.vararg:  # `*args`: the surplus positional arguments, one by one
        params.append(Ty(K.SEQ, ref=K.T_UNKNOWN, items=tuple(values[len(positional):])))
    return tuple(params)


def _default_type(callee: FunctionInfo, arg: ast.arg, default: ast.expr | None) -> Ty:
    if default is None:
        return K.T_UNKNOWN
    if isinstance(default, ast.Constant) and isinstance(default.value, bool):
        return K.bool_literal(default.value)
    if isinstance(default, ast.Constant) and default.value is None:
        return K.T_NONE  # not passed: it is None (`generator=None` draws from the global generator)
    ty = parameter_type(callee.module, arg, default, guess_tensor=False)
    if isinstance(default, ast.Constant) and isinstance(default.value, str) and ty.kind == K.STR:
        return ty.but(ref=K.Literal(default.value))
    return ty


def args_with_defaults(node):
    positional = [*node.args.posonlyargs, *node.args.args]
    defaults = [None] * (len(positional) - len(node.args.defaults)) + list(node.args.defaults)
    return [*zip(positional, defaults), *zip(node.args.kwonlyargs, node.args.kw_defaults)]
