"""Type-lite: just enough to tell tensors from Python scalars, shapes and modules.

A branch on a tensor's *value* breaks the graph; a branch on a shape, a dtype, a Python
constant or `self.training` specializes. Flags on tensors (0-d, boolean, integer) decide
between "index with a mask" (dynamic output shape) and "index with a 0-d tensor" (host read).
"""
from __future__ import annotations

from typing import NamedTuple

TENSOR = "tensor"
INT = "int"          # a static Python int: shapes, len(), constants
NUM = "number"       # a Python number of unknown origin (arguments, hyper-parameters)
BOOL = "bool"        # a static Python bool (self.training, is_grad_enabled(), comparisons of statics)
DATA = "data"        # a Python value read from tensor data (after .item(): a break already happened)
SHAPE = "shape"
DTYPE = "dtype"
DEVICE = "device"
STR = "str"
NONE = "none"
SEQ = "sequence"     # list/tuple/ModuleList; `ref` is the element type
DICT = "dict"        # `ref` is the value type (None: an empty display, values not seen yet)
MODULE = "module"    # an nn.Module instance; `ref` is a ClassInfo or a dotted class name
NDARRAY = "ndarray"
FUNC = "function"    # `ref` is a FunctionInfo
CLASS = "class"      # `ref` is a ClassInfo or dotted name
LOGGER = "logger"
OBJ = "object"       # some other Python object
UNKNOWN = "unknown"


class Ty(NamedTuple):
    """A type-lite value. A named tuple, not a dataclass: walks create and hash thousands of
    them (memo keys hold parameter types), and tuples do both in C."""

    kind: str
    zero_dim: bool = False
    boolean: bool = False
    integer: bool = False
    optional: bool = False
    ref: object = None
    shape_derived: bool = False  # INT/BOOL computed from a tensor's sizes (recompile-relevant)
    items: tuple | None = None  # SEQ: per-position types of a tuple/list display
    # MODULE/OBJ of one workspace class: (name, Ty) pairs, sorted, of what this instance's
    # constructor arguments stored (`Compose([Resize(), Normalize()])`), over the class's own
    attrs: tuple | None = None

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR and not self.optional

    @property
    def maybe_tensor(self) -> bool:
        return self.kind == TENSOR

    def but(self, **changes) -> "Ty":
        return self._replace(**changes)


class Wrapped(NamedTuple):
    """The `ref` of a FUNC value that is a decorator's wrapper (or the function it wraps):
    calling it walks `function` as it is, with the closure the decorator gave it."""

    function: object  # FunctionInfo
    closure: tuple


class Partial(NamedTuple):
    """The `ref` of a FUNC value made by `functools.partial(fn, *args, **kwargs)`: calling it calls
    `function` (a FUNC value) with these arguments first."""

    function: Ty
    args: tuple
    kwargs: tuple  # sorted (name, Ty) pairs


class GlobalDefault(NamedTuple):
    """The `ref` of an UNKNOWN parameter type whose default is a module-level name
    (`hooks=DEFAULT_HOOKS`, `cfg=DEFAULT_CONFIG`): the walk gives the parameter that global's
    type, or `fallback` (the annotation's) when it has none."""

    name: str
    fallback: Ty


class Bound(NamedTuple):
    """The `ref` of a FUNC value that is a method read off an instance (`self._advance` kept in
    a list of callbacks): calling it runs `function` with `receiver` as `self`."""

    function: object  # FunctionInfo
    receiver: Ty


T_TENSOR = Ty(TENSOR)
T_SCALAR_TENSOR = Ty(TENSOR, zero_dim=True)
T_BOOL_TENSOR = Ty(TENSOR, boolean=True)
T_INT_TENSOR = Ty(TENSOR, integer=True)
T_INT = Ty(INT)
T_SHAPE_INT = Ty(INT, shape_derived=True)
T_NUM = Ty(NUM)
T_BOOL = Ty(BOOL)
T_SHAPE_BOOL = Ty(BOOL, shape_derived=True)
# A tensor's rank (`x.dim()`, `x.ndim`): Dynamo guards on it like on sizes, but under
# torch.jit.trace it is a plain int (only sizes are traced values).
RANK = "rank"
T_RANK_INT = Ty(INT, shape_derived=True, ref=RANK)
T_RANK_BOOL = Ty(BOOL, shape_derived=True, ref=RANK)
T_DATA = Ty(DATA)
T_SHAPE = Ty(SHAPE, shape_derived=True)
T_DTYPE = Ty(DTYPE)
T_DEVICE = Ty(DEVICE)
T_STR = Ty(STR)
T_TENSOR_TEXT = Ty(STR, ref="tensor text")  # `f"{t:.2f}"`: Dynamo formats it lazily, when the string is used
T_NONE = Ty(NONE)
T_OBJ = Ty(OBJ)
T_UNKNOWN = Ty(UNKNOWN)
T_NDARRAY = Ty(NDARRAY)
T_LOGGER = Ty(LOGGER)
T_GENERATOR = Ty(OBJ, ref="torch.Generator")
# np.random.default_rng(...) / RandomState(...): every method call on one breaks (calls.py)
T_NUMPY_GENERATOR = Ty(OBJ, ref="numpy.random.Generator")
T_HOOK_HANDLE = Ty(OBJ, ref="torch.utils.hooks.RemovableHandle")
T_SPARSE = Ty(OBJ, ref="torch.sparse tensor")  # what Dynamo cannot wrap (GB0015)
T_TENSOR_SEQ = Ty(SEQ, ref=T_TENSOR)
T_OPTIMIZER = Ty(OBJ, ref="torch.optim.Optimizer")
T_LR_SCHEDULER = Ty(OBJ, ref="torch.optim.lr_scheduler.LRScheduler")
T_PARAM_GROUP = Ty(OBJ, ref="torch.optim.Optimizer.param_groups[i]")  # a dict Dynamo guards on


class WallClock(NamedTuple):
    """The `ref` of a number computed from a clock reading (`t0 = time.perf_counter()`) that a
    part of the frame resumed after a later graph break read as one of its locals."""
    name: str
    read: object  # the ast.Name where that part read the local


class Literal(NamedTuple):
    """The `ref` of a STR/INT parameter left at its literal default (`limit_type: str = "max"`):
    Dynamo and the tracer see the constant, so `if limit_type == "max":` is folded."""
    value: object


def bool_literal(value: bool) -> Ty:
    """`warning=False` passed to (or defaulted in) a callee: its `if warning:` is folded."""
    return Ty(BOOL, ref=value)


def in_mode(module: Ty, training: bool) -> Ty:
    """A workspace module put in training or eval mode where it is traced: `self.training` in
    its methods (and its submodules', see FunctionWalker.module_attribute) is that constant."""
    if module.kind != MODULE:
        return module
    attrs = dict(module.attrs or ())
    attrs["training"] = bool_literal(training)
    return module.but(attrs=tuple(sorted(attrs.items())))


def rank_only(*types: Ty) -> bool:
    """Every shape-derived value among `types` is a rank (and there is one)."""
    derived = [t for t in types if t.shape_derived]
    return bool(derived) and all(t.ref == RANK for t in derived)


def is_training_object(ref) -> bool:
    """An optimizer, LR scheduler or AMP GradScaler (the `ref` of its OBJ type, a dotted class
    name): Dynamo traces none of their methods."""
    if not isinstance(ref, str) or not ref.rpartition(".")[2].lstrip("_")[:1].isupper():
        return False  # `torch.optim.lr_scheduler` is a module, `torch.optim.lr_scheduler.StepLR` a class
    return ref.startswith("torch.optim.") and ref.count(".") == 2 or ref.startswith("torch.optim.lr_scheduler.") \
        or ref.endswith((".GradScaler", ".SWALR"))


PLAIN_KINDS = {INT, NUM, BOOL, STR, NONE, SHAPE, DTYPE, DEVICE, DATA}
_TENSORS = {(zero_dim, boolean, integer): Ty(TENSOR, zero_dim=zero_dim, boolean=boolean, integer=integer)
            for zero_dim in (False, True) for boolean in (False, True) for integer in (False, True)}


def tensor(zero_dim: bool, boolean: bool, integer: bool) -> Ty:
    """A tensor type with these flags (shared instances: results of tensor ops are the most
    frequent types a walk creates)."""
    return _TENSORS[zero_dim, boolean, integer]


def holds_code(ty: Ty) -> bool:
    """A value whose type decides which user code a call runs: a function, a workspace class or
    an instance of one, or a container of them."""
    if ty.kind in (SEQ, DICT):
        return isinstance(ty.ref, Ty) and holds_code(ty.ref)
    return ty.kind == FUNC or ty.kind in (MODULE, OBJ, CLASS) and ty.ref is not None and not isinstance(ty.ref, str)


def seq_of(element: Ty) -> Ty:
    return Ty(SEQ, ref=element)


def sized_by_shape(iterable: Ty) -> bool:
    """A sequence whose length is a tensor size (`range(x.shape[0])`; a SEQ's shape_derived flag):
    Dynamo unrolls a loop over it, so the trip count is guarded. (So does iterating a tensor, but
    an unannotated parameter taken for a tensor is as often a list of them.)"""
    return iterable.kind == SEQ and iterable.shape_derived


def _alternatives(a, b) -> tuple | None:
    """The classes a module or object may be (`self.mix = A() if c else B()`, a list of
    transforms, `ENCODERS[name]`), or the functions a callable may be: calls try each."""
    if a is None or b is None:
        return None
    return tuple(dict.fromkeys([*(a if type(a) is tuple else (a,)), *(b if type(b) is tuple else (b,))]))


def _element_join(a, b):
    """Element types of two sequences (or dicts) merged; None is an empty display's."""
    if a is None or b is None:
        return a if b is None else b
    return join(a, b) if isinstance(a, Ty) and isinstance(b, Ty) else None


def _ref_join(kind: str, a, b):
    if a == b:
        return a
    if kind in (SEQ, DICT):
        return _element_join(a, b)
    if kind in (MODULE, FUNC) or kind in (OBJ, CLASS) and not isinstance(a, str) and not isinstance(b, str):
        return _alternatives(a, b)
    return None


RANDOM_VALUE = "random value"  # the `ref` of a random.* number, a graph input to Dynamo (checker.binary)


def join(a: Ty, b: Ty) -> Ty:
    """Type after control flow merges."""
    if a == b:
        return a
    for drawn, other in ((a, b), (b, a)):  # `top = random.randint(...) if self.training else c`:
        if drawn.ref == RANDOM_VALUE and other.kind in (INT, NUM):  # arithmetic on it breaks on that path
            return drawn
    if a.kind == NONE:
        return b.but(optional=True)
    if b.kind == NONE:
        return a.but(optional=True)
    if a.kind == b.kind:
        items = tuple(join(x, y) for x, y in zip(a.items, b.items)) \
            if a.items is not None and b.items is not None and len(a.items) == len(b.items) else None
        return Ty(a.kind, optional=a.optional or b.optional, ref=_ref_join(a.kind, a.ref, b.ref),
                  shape_derived=a.shape_derived or b.shape_derived, zero_dim=a.zero_dim and b.zero_dim,
                  boolean=a.boolean and b.boolean, integer=a.integer and b.integer, items=items,
                  attrs=a.attrs if a.attrs == b.attrs else None)
    if {a.kind, b.kind} <= {INT, NUM, BOOL}:
        return Ty(NUM, shape_derived=a.shape_derived or b.shape_derived)
    if {a.kind, b.kind} == {SHAPE, SEQ}:  # `return [0]` (a literal size list) or `return starts`
        seq = a if a.kind == SEQ else b
        return Ty(SEQ, ref=_element_join(seq.ref, T_INT), shape_derived=a.shape_derived or b.shape_derived,
                  optional=a.optional or b.optional)
    return T_UNKNOWN


# --- tensor methods ---------------------------------------------------------------------------
# Methods/attributes whose result is not a tensor.
TENSOR_ATTRS: dict[str, Ty] = {
    "shape": T_SHAPE, "ndim": T_RANK_INT, "dtype": T_DTYPE, "device": T_DEVICE,
    "is_cuda": T_BOOL, "is_sparse": T_BOOL, "is_leaf": T_BOOL, "requires_grad": T_BOOL,
    "is_nested": T_BOOL, "is_quantized": T_BOOL, "is_meta": T_BOOL, "layout": T_OBJ, "names": T_OBJ,
    "grad_fn": T_OBJ, "itemsize": T_INT, "nbytes": T_SHAPE_INT,
}
TENSOR_METHODS_NON_TENSOR: dict[str, Ty] = {
    "dim": T_RANK_INT, "ndimension": T_RANK_INT, "numel": T_SHAPE_INT, "nelement": T_SHAPE_INT,
    "element_size": T_INT, "stride": T_SHAPE, "storage_offset": T_INT, "get_device": T_INT,
    "is_contiguous": T_BOOL, "is_floating_point": T_BOOL, "is_complex": T_BOOL, "is_signed": T_BOOL,
    "data_ptr": Ty(INT, ref="data_ptr"), "type": T_STR, "numpy": T_NDARRAY, "untyped_storage": T_OBJ,
    "register_hook": T_OBJ, "__len__": T_SHAPE_INT,
}
SEQUENCE_METHODS = {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "topk", "sort",
                    "aminmax", "frexp", "cummax", "cummin", "kthvalue", "mode", "slogdet", "qr", "svd",
                    "lu", "unique_consecutive", "histogram"}
# With a `dim` these return (values, indices); without one a 0-d tensor.
DIM_TUPLE_METHODS = {"max", "min", "median", "nanmedian"}
FULL_REDUCTIONS = {"sum", "mean", "max", "min", "prod", "norm", "std", "var", "all", "any", "argmax", "argmin",
                   "median", "nansum", "nanmean", "count_nonzero", "amax", "amin", "dot", "vdot", "trace",
                   "logsumexp"}
BOOL_RESULT = {"eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal",
               "not_equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isclose", "isin", "isreal",
               "signbit", "logical_and", "logical_or", "logical_not", "logical_xor", "bool", "all", "any"}
INT_RESULT = {"argmax", "argmin", "argsort", "long", "int", "short", "bincount", "searchsorted", "bucketize",
              "multinomial", "randint", "randperm", "nonzero", "argwhere", "randint_like"}
# Ops that keep a mask a mask (and an index an index).
LAYOUT_PRESERVING = {"transpose", "t", "T", "mT", "view", "reshape", "expand", "expand_as", "unsqueeze", "squeeze",
                     "permute", "contiguous", "clone", "to", "flip", "roll", "tril", "triu", "repeat", "flatten",
                     "detach", "cpu", "cuda", "view_as", "reshape_as", "movedim", "narrow", "select",
                     "index_select", "gather", "masked_fill", "__invert__", "unflatten", "swapaxes", "diagonal"}
# Output size depends on the data (capture_dynamic_output_shape_ops=False → break); aten tags
# them dynamic_output_shape. So is aten._ctc_loss (it sizes a buffer from the target lengths).
DYNAMIC_SHAPE_OPS = {"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount", "ctc_loss",
                     "combinations"}

# --- torch.* functions -------------------------------------------------------------------------
TORCH_NON_TENSOR: dict[str, Ty] = {
    "torch.is_tensor": T_BOOL, "torch.is_floating_point": T_BOOL, "torch.is_complex": T_BOOL,
    "torch.is_grad_enabled": T_BOOL, "torch.is_autocast_enabled": T_BOOL, "torch.get_default_dtype": T_DTYPE, "torch.numel": T_SHAPE_INT,
    "torch.compiler.is_compiling": T_BOOL, "torch.compiler.is_dynamo_compiling": T_BOOL,
    "torch._dynamo.is_compiling": T_BOOL, "torch.jit.is_scripting": T_BOOL, "torch.jit.is_tracing": T_BOOL,
    "torch._C._get_tracing_state": T_BOOL, "torch.cuda.is_available": T_BOOL,
    "torch.device": T_DEVICE, "torch.Size": T_SHAPE, "torch.finfo": T_OBJ, "torch.iinfo": T_OBJ,
    "torch.no_grad": T_OBJ, "torch.enable_grad": T_OBJ,
    "torch.inference_mode": T_OBJ, "torch.autocast": T_OBJ, "torch.set_grad_enabled": T_OBJ,
    "torch.broadcast_shapes": T_SHAPE, "torch.promote_types": T_DTYPE,
    "torch.cuda.synchronize": T_NONE, "torch._assert": T_NONE, "torch._check": T_NONE,
    "torch.sym_int": T_INT, "torch.sym_float": T_NUM, "torch.sym_max": T_INT, "torch.sym_min": T_INT,
}
TORCH_SEQUENCE_FUNCS = {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "topk", "sort",
                        "meshgrid", "broadcast_tensors", "std_mean", "var_mean", "aminmax", "frexp", "cummax",
                        "cummin", "kthvalue", "mode", "slogdet", "histogram", "atleast_1d", "atleast_2d",
                        "atleast_3d", "unravel_index", "svd", "qr", "eig", "eigh", "lu", "lu_factor", "lu_factor_ex",
                        "lstsq", "cholesky_ex", "inv_ex", "solve_ex", "ldl_factor", "ldl_factor_ex", "svd_lowrank",
                        "pca_lowrank", "triangular_solve", "geqrf", "histogramdd"}
DTYPE_NAMES = {"float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8", "int16",
               "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat",
               "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"}
NN_TENSOR_ATTRS = {"weight", "bias", "running_mean", "running_var", "in_proj_weight", "in_proj_bias",
                   "num_batches_tracked", "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}


def is_dynamic_repeat(args_types: list[Ty]) -> bool:
    """torch.repeat_interleave(x, repeats) / torch.repeat_interleave(repeats): a tensor `repeats`
    gives a data-dependent size."""
    return args_types[min(1, len(args_types) - 1)].maybe_tensor if args_types else False
