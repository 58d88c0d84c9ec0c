"""Calls: builtins, torch functions, tensor methods, library calls, user functions.

Each branch below is one of Dynamo's behaviours measured on torch 2.13 (see tests/corpus):
which calls break the graph, and what type-lite value a call produces.
"""
from __future__ import annotations

import ast
import functools
import re

from . import kinds as K
from .fixes import fix_for
from .index import COMPILE, EXPORT, EXTERNAL_PREFIXES, TRACE, ClassInfo, FunctionInfo
from .kinds import Ty

LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "fatal"}
CLOCK_CALLS = {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
               "time.perf_counter_ns", "time.monotonic_ns"}
SKIPPED_CALLS = CLOCK_CALLS | {
    "time.sleep", "uuid.uuid1", "uuid.uuid4", "uuid.uuid3",
    "uuid.uuid5", "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
    "datetime.date.today", "datetime.now", "datetime.utcnow", "datetime.today", "date.today",
    "torch.save", "torch.load", "torch.nn.utils.rnn.pack_padded_sequence",
    # torch's own host-side utilities (measured on 2.13: skipped, GB0007/GB0008)
    "torch.manual_seed", "torch.random.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
    "torch.get_rng_state", "torch.random.get_rng_state", "torch.set_rng_state", "torch.random.set_rng_state",
    "torch.set_num_threads", "torch.set_flush_denormal", "torch.set_anomaly_enabled",
    "torch.autograd.set_detect_anomaly", "torch.typename", "torch.hub.get_dir",
    "torch.utils.data.get_worker_info", "torch.utils.data.default_collate",
    "warnings.simplefilter", "warnings.filterwarnings", "warnings.resetwarnings",
}
# Library base classes whose Python `__init__` Dynamo skips: constructing a subclass breaks (GB0007;
# measured on 2.13 for StyleGAN's `suppress_tracer_warnings(warnings.catch_warnings)`).
SKIPPED_BASE_CLASSES = {"warnings.catch_warnings"}
# Sparse tensors: the constructors are skipped (GB0007) and the sparse result cannot enter a graph
# ("Attempted to wrap sparse Tensor", GB0015, at its first use), measured on 2.13.
SPARSE_CONSTRUCTORS = {"torch.sparse_coo_tensor", "torch.sparse_csr_tensor", "torch.sparse_csc_tensor",
                       "torch.sparse_bsr_tensor", "torch.sparse_bsc_tensor", "torch.sparse_compressed_tensor"}
# torch functions whose Python result Dynamo can neither trace nor fold into a constant
# ("torch.* op returned non-Tensor", GB0208; is_inference_mode_enabled: GB0046; measured on
# 2.13). The queries it folds (cuda.is_available, is_grad_enabled, get_default_dtype, ...) are
# in kinds.TORCH_NON_TENSOR.
TORCH_HOST_QUERIES = {
    "torch.initial_seed": K.T_INT, "torch.random.initial_seed": K.T_INT, "torch.get_num_threads": K.T_INT,
    "torch.cuda.device_count": K.T_INT, "torch.get_device": K.T_INT, "torch.backends.cudnn.is_available": K.T_BOOL,
    "torch.backends.mps.is_available": K.T_BOOL, "torch.is_storage": K.T_BOOL, "torch.can_cast": K.T_BOOL,
    "torch.is_warn_always_enabled": K.T_BOOL, "torch.is_inference_mode_enabled": K.T_BOOL,
    "torch.is_deterministic_algorithms_warn_only_enabled": K.T_BOOL, "torch.result_type": K.T_DTYPE,
    "torch.get_float32_matmul_precision": K.T_STR,
}
GENERATOR = "torch.Generator"
TRACERS = (TRACE, EXPORT)  # roots whose truth is torch.jit.trace's (tests/dynamo_oracle.py)
# Assertions that compare tensor values in Python branches (GB0170 inside torch.testing).
VALUE_ASSERTIONS = {"torch.testing.assert_close", "torch.testing.assert_allclose"}
# Stdlib modules implemented in C: Dynamo cannot trace into their functions and marks them as
# skipped (measured on 2.13: zlib.crc32/adler32, hashlib.*, binascii.crc32, bisect.*, heapq.*).
SKIPPED_MODULES = {"zlib", "hashlib", "binascii", "bisect", "heapq"}
# The `random` functions Dynamo supports (with constant arguments): it draws the value at run time
# and passes it into the graph as an input, a 0-d tensor. Every other `random.*` function is a
# method of the module's hidden Random instance, which Dynamo skips (GB0007).
RANDOM_VALUE_CALLS = {"randint", "randrange", "uniform"}
RANDOM_VALUE = K.RANDOM_VALUE  # the `ref` of such a value's type (see checker.binary)
# Ops that take such a value as a scalar operand and trace it (measured: `x * s`, `clamp(max=s)`,
# `torch.full(size, s)`). Any other torch op or tensor method given one as an argument (a shift,
# size, length, pad, dim: `torch.roll(x, s)`, `x.narrow(0, 0, s)`, `F.pad(x, (s, s))`,
# `x.repeat(s, 1)`, `torch.zeros(s)`) needs it as a Python int and reads it on the host (GB0033).
RANDOM_SCALAR_OPS = {"add", "sub", "mul", "div", "true_divide", "pow", "clamp", "clip", "clamp_min", "clamp_max",
                     "full", "full_like", "new_full", "fill_", "masked_fill", "masked_fill_", "where", "lerp",
                     "add_", "sub_", "mul_", "div_", "rsub"}
# Third-party libraries Dynamo skips (trace_rules.THIRDPARTY_SKIPLIST, numpy aside: torch._numpy
# translates it) and whole extension modules with no Python source (cv2): every call breaks (GB0007).
# SciPy and PIL are inlined but soon reach compiled code: measured on 2.13, linear_sum_assignment
# and spatial.distance.cdist are skipped (GB0007), the scipy.special ufuncs (`expit`, `gamma`) are
# unsupported calls (GB0156), ndimage/stats/logsumexp/linalg.expm and PIL's Image.new/fromarray
# break inside; the pure-NumPy helpers below trace through torch._numpy.
SKIPPED_LIBRARIES = {"sklearn", "pandas", "networkx", "tqdm", "tabulate", "hypothesis", "xarray", "onnx",
                     "onnxruntime", "onnx_tf", "tensorflow", "tensorrt", "torch2trt", "tvm", "fx2trt_oss", "cv2",
                     "scipy", "PIL"}
# Python-level library functions Dynamo compiles as frames of their own when eager code calls
# them: they break inside even where the calling frame was given up.
LIBRARY_FRAMES_TRACED = ("scipy.ndimage.", "scipy.stats.")
TRACEABLE_LIBRARY_CALLS = {"scipy.special.softmax", "scipy.special.log_softmax"}
DICT_CLASSES = {"collections.defaultdict", "collections.OrderedDict", "collections.Counter"}
STREAM_CALLS = {"sys.stdout.write", "sys.stderr.write", "sys.stdout.flush", "sys.stderr.flush"}
AUTOGRAD_CALLS = {"torch.autograd.grad", "torch.autograd.backward"}
# torch.autograd.functional takes the function to differentiate as an argument, which Dynamo cannot
# put in a graph (GB0055, measured on 2.13); the torch.func transforms (grad, jacrev, vmap...) trace.
AUTOGRAD_FUNCTIONAL = {"jacobian": K.T_TENSOR, "hessian": K.T_TENSOR, "vjp": K.T_TENSOR_SEQ,
                       "jvp": K.T_TENSOR_SEQ, "hvp": K.T_TENSOR_SEQ, "vhp": K.T_TENSOR_SEQ}
PARAMETER_CALLS = {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
GRAPH_BREAK_CALLS = {"torch._dynamo.graph_break"}
# Fields of the named tuples (torch.return_types) that topk, sort, max/min(dim), mode, median,
# kthvalue, cummax, aminmax, frexp, slogdet, qr, svd, linalg.eigh... return.
RETURN_TYPE_FIELDS = {
    **dict.fromkeys(("values", "min", "max", "mantissa", "sign", "logabsdet", "Q", "R", "U", "S", "V", "Vh", "L",
                     "LU", "eigenvalues", "eigenvectors", "hist", "bin_edges", "solution"), K.T_TENSOR),
    **dict.fromkeys(("indices", "exponent", "pivots"), K.T_INT_TENSOR),
}
VALUES_INDICES_OPS = {"topk", "sort", "max", "min", "median", "nanmedian", "mode", "kthvalue", "cummax", "cummin"}
VALUES_INDICES = Ty(K.SEQ, ref=K.T_TENSOR, items=(K.T_TENSOR, K.T_INT_TENSOR))
# Methods that change a list or dict in place (tensors have none of them).
CONTAINER_MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove"}
# Recurrent modules Dynamo refuses to wrap (allow_rnn=False); the cells trace fine.
RNN_MODULES = {"torch.nn.RNN", "torch.nn.GRU", "torch.nn.LSTM"}
# nn.Embedding / F.embedding compare a padding_idx other than 0 with the table's size.
CHECKED_EMBEDDING = "torch.nn.Embedding(padding_idx)"
# Registering a module hook inside compiled code breaks ("setattr() on unsupported type", GB0467),
# and so does removing the handle (GB0013), measured on 2.13. Tensor.register_hook traces.
MODULE_HOOKS = {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                "register_full_backward_pre_hook", "register_backward_hook"}
# Modules whose forward compares input sizes in Python (TracerWarnings inside torch, measured on
# 2.13; BatchNorm modules do so only in training mode, which the analyzer cannot see).
SIZE_CHECKING_MODULES = {CHECKED_EMBEDDING, "torch.nn.GroupNorm", "torch.nn.InstanceNorm1d", "torch.nn.InstanceNorm2d",
                         "torch.nn.InstanceNorm3d", "torch.nn.MultiheadAttention", "torch.nn.TransformerEncoderLayer",
                         "torch.nn.TransformerDecoderLayer", "torch.nn.TransformerEncoder",
                         "torch.nn.TransformerDecoder", "torch.nn.Transformer"}
SIZE_CHECKING_FUNCTIONS = {"group_norm", "instance_norm", "multi_head_attention_forward"}
SIZE_LIST_CHECKED = {"affine_grid": ("size", 1)}  # `if min(size) <= 0` in Python: (keyword, position)
SIZE_KINDS = (K.INT, K.NUM, K.BOOL, K.SHAPE)
# Methods that tensors (and NumPy arrays, which Dynamo traces as tensors) have, but no builtin
# type and no nn.Module: a value of unknown type that calls one is, in practice, a tensor
# (`outputs.logits.argmax(-1)`, `logits_fn(x)[:, -1].softmax(-1)`, `batch["ids"].tolist()`).
TENSOR_ONLY_METHODS = {
    "item", "tolist", "argmax", "argmin", "argsort", "softmax", "log_softmax", "sigmoid", "tanh", "relu",
    "sum", "mean", "std", "var", "prod", "cumsum", "any", "all", "max", "min", "amax", "amin", "norm",
    "abs", "exp", "sqrt", "pow", "clamp", "clip", "topk", "gather", "scatter", "masked_fill",
    "view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "flatten", "expand", "contiguous",
    "detach", "clone", "numpy", "nonzero", "unique", "eq", "ne", "gt", "lt", "ge", "le", "matmul",
    "size", "dim", "numel", "backward",
}
# NumPy functions torch._numpy lacks (torch 2.13, NumPy 2.x): Dynamo cannot translate them (GB0294).
NUMPY_UNSUPPORTED = {
    "apply_along_axis", "apply_over_axes", "argpartition", "partition", "asarray_chkfinite", "compress", "delete",
    "insert", "digitize", "ediff1d", "extract", "frexp", "histogram_bin_edges", "interp", "intersect1d",
    "union1d", "setdiff1d", "setxor1d", "isin", "lexsort", "nanargmax", "nanargmin", "nancumprod", "nancumsum",
    "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum",
    "nanvar", "packbits", "unpackbits", "piecewise", "place", "putmask", "polyfit", "polyval", "ravel_multi_index",
    "unravel_index", "roots", "select", "trapezoid", "trim_zeros", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "unwrap", "fromfunction", "fromiter", "frombuffer", "ix_",
    "cumulative_sum", "cumulative_prod", "linalg.vector_norm", "linalg.matrix_norm", "linalg.svdvals",
    "linalg.cross", "linalg.outer", "linalg.tensordot", "linalg.trace", "linalg.diagonal",
    "spacing", "sort_complex", "asanyarray", "asfortranarray", "astype", "bitwise_count", "block", "einsum_path",
    "matrix_transpose", "matvec", "vecmat", "vecdot", "unstack", "mask_indices", "poly", "polyadd", "polyder",
    "polydiv", "polyint", "polymul", "polysub", "array2string", "array_repr", "array_str", "isnat", "require",
}
# torch._numpy functions that check their input's values in Python (an `aten.equal` inside the
# translation, GB0033), measured on 2.13; np.linalg.*, percentile/quantile/median, histogram trace.
NUMPY_VALUE_CHECKED = {"cov", "corrcoef"}
# Their result's size depends on the values (torch's nonzero/unique/bincount underneath, GB0036),
# measured on 2.13; `np.where(cond)` with one argument is `np.nonzero`.
NUMPY_DATA_DEPENDENT_SIZE = {"unique", "nonzero", "flatnonzero", "argwhere", "bincount"}
# Element-wise tests: their result is a mask (indexing with it has a data-dependent size).
NUMPY_PREDICATES = {"isfinite", "isnan", "isinf", "isneginf", "isposinf", "signbit", "isclose", "logical_and",
                    "logical_or", "logical_not", "logical_xor", "greater", "greater_equal", "less", "less_equal",
                    "equal", "not_equal"}
NUMPY_BOOL_RESULT = {"allclose", "array_equal"}
# The np.random functions torch._numpy has; every other one breaks (GB0294). Without a size,
# those that take one return a Python number read from a tensor (GB0033); so does `choice`
# always (it checks that its probabilities sum to 1 in Python).
NUMPY_RANDOM = {"seed", "random_sample", "sample", "random", "rand", "randn", "normal", "choice", "randint",
                "shuffle", "uniform"}
# NumPy random generator objects: creating one in compiled code breaks (GB0294/GB0156) and so
# does every method call on one made elsewhere (`self.rng.random()`, GB0156), measured on 2.13.
NUMPY_GENERATOR_CLASSES = {"default_rng", "RandomState", "Generator"}
NUMPY_RANDOM_SIZE_AT = {"random_sample": 0, "sample": 0, "random": 0, "uniform": 2, "normal": 2, "randint": 2}
# NumPy calls that build an array from Python numbers; any other NumPy function of Python
# numbers only (`np.sqrt(d)`) is constant-folded by Dynamo into a Python number.
NUMPY_ARRAY_BUILDERS = {"array", "asarray", "asanyarray", "ascontiguousarray", "zeros", "ones", "empty", "full",
                        "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "atleast_1d",
                        "atleast_2d", "atleast_3d"}
BUILTIN_NON_TENSOR = {"isinstance": K.T_BOOL, "issubclass": K.T_BOOL, "hasattr": K.T_BOOL, "callable": K.T_BOOL,
                      "id": K.T_INT, "type": K.T_OBJ, "super": K.T_OBJ, "getattr": K.T_UNKNOWN,
                      "setattr": K.T_NONE, "set": K.T_OBJ, "object": K.T_OBJ,
                      "iter": K.T_OBJ, "next": K.T_UNKNOWN, "divmod": K.T_OBJ, "hash": K.T_INT}


def evaluate_call(walker, node: ast.Call) -> Ty:
    func = node.func
    callee_breaks = walker.callee_breaks
    args = []
    for arg in node.args:
        ty = argument_type(walker, arg)
        if isinstance(arg, ast.Starred) and ty.kind in (K.SEQ, K.SHAPE) and ty.items is not None:
            args.extend(ty.items)  # `fn(*args)` in a wrapper that received known arguments
        else:
            args.append(ty)
    kwargs = {kw.arg: argument_type(walker, kw.value) for kw in node.keywords if kw.arg}
    for kw in node.keywords:
        if kw.arg is None:
            walker.expr(kw.value)
    arguments_broke = walker.callee_breaks > callee_breaks and walker.mode == COMPILE

    receiver = walker.expr(func.value) if isinstance(func, ast.Attribute) else None
    if receiver is not None and receiver.kind in (K.MODULE, K.OBJ) and isinstance(receiver.ref, ClassInfo) \
            and _is_super_call(func.value) and isinstance(walker.env.get("self"), Ty):
        method = receiver.ref.lookup_method(func.attr)
        if method is not None:  # `super().forward(x)`: the base's method, run on this object (its overrides)
            return walker.call_method(node, method, args, kwargs, walker.env["self"])
    if receiver is not None and receiver.kind == K.STR and func.attr == "join" and args \
            and walker.element_type(args[0]) == K.T_TENSOR_TEXT:
        walker.report("FL116", node, "`str.join` of strings formatted from tensors: Dynamo cannot join them "
                                     "without the tensors' values")
        return K.T_STR
    if receiver is not None and func.attr in MODULE_HOOKS and receiver.kind in (K.MODULE, K.UNKNOWN):
        walker.report("FL129", node, f"`{func.attr}()` inside compiled code: Dynamo cannot install a hook")
        return K.T_HOOK_HANDLE
    if receiver == K.T_HOOK_HANDLE and func.attr == "remove":
        walker.report("FL129", node, "removing a hook handle inside compiled code is not traceable")
        return K.T_NONE
    if receiver is not None:
        if func.attr in CONTAINER_MUTATORS:
            walker.report_state_change(func.value, node)
        if receiver.kind in (K.OBJ, K.CLASS):  # of a workspace class (else: None, and on below)
            returns = object_method(walker, node, receiver, func.attr, args, kwargs)
            if returns is not None:
                return returns
        if receiver.kind == K.TENSOR:
            if arguments_broke:
                # measured on 2.13: the resumed code finds the bound `t.add` on the stack and
                # cannot trace it (a bound method of a tensor it did not make): a second break
                walker.report("FL132", node, f"`.{func.attr}()` resumes after a graph break in its arguments: "
                                             "Dynamo calls the bound tensor method as skipped code",
                              fix=fix_for("FL132", walker, None, node))
            return tensor_method(walker, node, func.attr, receiver, args, kwargs)
        if receiver.kind == K.DATA:  # a host value's methods give host values
            return K.T_DATA
        if receiver.kind == K.UNKNOWN and func.attr in TENSOR_ONLY_METHODS:
            return tensor_method(walker, node, func.attr, K.T_TENSOR, args, kwargs)
        if receiver.kind == K.OBJ and isinstance(receiver.ref, str):
            if K.is_training_object(receiver.ref):
                return training_object_call(walker, node, receiver.ref, func.attr)
            if receiver == K.T_SPARSE:
                walker.report("FL121", node, f"`.{func.attr}()` of a sparse tensor: Dynamo cannot put sparse "
                                             "tensors in a graph")
                return K.T_SPARSE if func.attr in ("coalesce", "to_sparse_csr", "to_sparse_csc") else K.T_TENSOR
            if receiver == K.T_NUMPY_GENERATOR:
                walker.report("FL122", node, f"`{func.attr}()` of a NumPy random generator is not traced by Dynamo")
                return K.T_UNKNOWN
            if receiver.ref.startswith("datetime."):  # measured on 2.13: t.timetuple() GB0156, t.hour traces
                walker.report("FL121", node, f"`{receiver.ref}.{func.attr}()` is not traceable: the graph breaks")
                return K.T_UNKNOWN
            if receiver.ref == "random.Random":
                if func.attr in RANDOM_VALUE_CALLS or func.attr == "random":
                    # measured on 2.13: traced like the module's functions (a graph input)
                    return Ty(K.TENSOR, zero_dim=True, ref=RANDOM_VALUE)
                # sample/shuffle/choice are Python code Dynamo does not trace
                walker.report("FL121", node, f"`random.Random.{func.attr}()` is not traceable: the graph breaks")
                return K.T_UNKNOWN
            if receiver.ref == GENERATOR:
                walker.report("FL127", node, f"`Generator.{func.attr}()` is stateful: Dynamo cannot trace it")
                return receiver if func.attr == "manual_seed" else K.T_UNKNOWN
            if receiver.ref.startswith("torch.distributions."):
                return K.T_TENSOR  # sample(), log_prob(), entropy(), ...
            if receiver.ref.startswith("io."):
                walker.report("FL113", node, f"`{receiver.ref}` I/O inside compiled code")
                return K.T_UNKNOWN
        if receiver.kind == K.MODULE:
            return module_method(walker, node, func.attr, receiver, args, kwargs)
        if receiver.kind == K.LOGGER:  # every Logger method breaks (isEnabledFor too, measured)
            message = "Logging call: logging.Logger methods are not traceable"
            if walker.dead and any(map(_has_tensor, [*args, *kwargs.values()])):
                # run eagerly, the method is a frame of its own that holds a tensor: Dynamo compiles
                # it, and it breaks (measured on 2.13: `logger.info("%f", f1.mean())` after a loop
                # that broke; a shape or a number argument leaves the frame to Python)
                walker.report_own_frame("FL111", node, message, f"logging.Logger.{func.attr}")
            else:
                walker.report("FL111", node, message,
                              fix=fix_for("FL111", walker, None, node) if func.attr in LOG_METHODS else None)
            return K.T_NONE
        if receiver.kind == K.SEQ and func.attr == "sort" and _holds_tensors(receiver):
            walker.report("FL143", node, "list.sort() over tensors compares their values in Python")
            return K.T_NONE
        if receiver.kind == K.SHAPE:
            return K.T_SHAPE_INT if func.attr in ("numel", "index", "count") else K.T_UNKNOWN
        if receiver.kind == K.NDARRAY:
            if func.attr in ("tobytes", "tofile", "dump", "dumps"):
                walker.report("FL122", node, f"`ndarray.{func.attr}()` is not traced")
                return K.T_OBJ
            # Dynamo traces arrays as tensors: reading one into Python is the tensor's host read.
            if func.attr == "item":
                walker.report("FL104", node, "`ndarray.item()` of an array traced as a tensor reads its value")
                return K.T_DATA
            if func.attr == "tolist":
                walker.report("FL103", node, "`ndarray.tolist()` of an array traced as a tensor reads its values")
                return K.seq_of(K.T_DATA)
            return K.T_NDARRAY
        if receiver.kind == K.SEQ and func.attr in ("append", "extend", "insert"):
            if isinstance(func.value, ast.Name) and func.value.id in walker.env and args:
                # `history = []; history.append(idx)`: the list now holds what was appended
                added = args[-1] if func.attr != "extend" else walker.element_type(args[0])
                held = receiver.ref if isinstance(receiver.ref, Ty) else None
                walker.env[func.value.id] = receiver.but(ref=K.join(held, added) if held else added, items=None)
            return K.T_NONE
        if receiver.kind == K.DICT:
            return dict_method(func.attr, receiver)
        if receiver.kind == K.FUNC and func.attr in ("__call__",):
            return call_function_value(walker, node, receiver, args, kwargs)
    callee = walker.expr(func) if not isinstance(func, ast.Attribute) else None
    dotted = walker.dotted(func)

    if callee is not None and callee.kind == K.FUNC:
        return call_function_value(walker, node, callee, args, kwargs)
    if callee is not None and callee.kind == K.OBJ:  # `scorer(x)`, `transform(x)`
        returns = object_method(walker, node, callee, "__call__", args, kwargs)
        if returns is not None:
            return returns
    if callee is not None and callee.kind == K.CLASS and isinstance(callee.ref, ClassInfo):
        return construct(walker, node, callee.ref, args, kwargs)
    if callee is not None and callee.kind == K.CLASS and type(callee.ref) is tuple:  # noqa: E721 - one of these
        return functools.reduce(K.join, [construct(walker, node, cls, args, kwargs) for cls in callee.ref])
    if callee is not None and callee.kind == K.MODULE:
        return module_call(walker, node, callee, args, kwargs)
    if isinstance(func, ast.Name) and dotted == func.id and (callee is None or callee.kind == K.UNKNOWN):
        return builtin_call(walker, node, func.id, args, kwargs)
    if dotted:
        if dotted.startswith(EXTERNAL_PREFIXES):  # never workspace code: skip the resolving below
            return library_call(walker, node, dotted, args, kwargs)
        if walker.module.is_disabled_name(dotted):
            walker.report("FL130", node, f"`{dotted}` is excluded from compilation (torch.compiler.disable)")
            return K.T_UNKNOWN
        function = walker.module.resolve_function(dotted) if "." in dotted or dotted in walker.module.functions \
            else None
        if function is not None:
            return walker.call_user(node, function, args, kwargs)
        cls = walker.module.resolve_class(dotted)
        if cls is not None:
            return construct(walker, node, cls, args, kwargs)
        return library_call(walker, node, dotted, args, kwargs)
    return K.T_UNKNOWN


def registered_functions(walker, table: str, key: ast.expr) -> list[FunctionInfo]:
    """The module's functions a registry decorator put in the module-level dict `table`:
    `@register(TABLE, "mse")`, or `@register("mse")` whose decorator stores into TABLE. With a
    constant key, the one registered under it."""
    module = walker.module
    if table in walker.env or not isinstance(module.globals.get(table), ast.Dict):
        return []
    # Every subscript of the dict asks: scan the module's decorators once per analysis (the texts
    # cannot change during one).
    found = walker.analysis.registries.get((module.path, table))
    if found is None:
        found = walker.analysis.registries[module.path, table] = _registry(module, table)
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return [function for name, function in found if name == key.value]
    return [function for _, function in found]


def _registry(module, table: str) -> list[tuple[str, FunctionInfo]]:
    """(registered name, function) of each function a decorator puts in `table`."""
    found = []
    for function in module.functions.values():
        text = function.block.text
        for decorator, arguments in _DECORATOR_CALL.findall(text[:max(text.find("def "), 0)]):
            factory = module.functions.get(decorator)
            if re.match(rf"\s*{re.escape(table)}\b", arguments) or factory is not None and re.search(
                    rf"\b{re.escape(table)}\[[^\]]*\]\s*=", factory.block.text):
                name = _STRING_ARGUMENT.search(arguments)
                found.append((name.group(1) if name else function.qualname, function))
    return found


_DECORATOR_CALL = re.compile(r"@([\w.]+)\(([^)]*)\)")
_STRING_ARGUMENT = re.compile(r"['\"]([^'\"]*)['\"]")


def training_object_call(walker, node: ast.Call, cls: str, name: str) -> Ty:
    """A method of an optimizer, LR scheduler or GradScaler (measured on 2.13: Optimizer.step
    graph-breaks on purpose in its wrapper, GB0025; zero_grad, state_dict, every scheduler and
    GradScaler method are marked as skipped, GB0008)."""
    if name == "step" and "lr_scheduler" not in cls and not cls.endswith(".GradScaler"):
        walker.report("FL125", node, "`Optimizer.step()` breaks the graph on purpose before and after the update")
    else:
        walker.report("FL125", node, f"`{cls.rsplit('.', 1)[1]}.{name}()` is marked as skipped by Dynamo: "
                                     f"the graph breaks")
    return K.T_TENSOR if name == "scale" else K.T_UNKNOWN


def dict_method(name: str, receiver: Ty) -> Ty:
    values = receiver.ref if isinstance(receiver.ref, Ty) else K.T_UNKNOWN
    if name in ("get", "pop", "setdefault"):
        return values
    if name == "values":
        return K.seq_of(values)
    if name == "items":
        return K.seq_of(Ty(K.SEQ, items=(K.T_UNKNOWN, values)))
    if name == "keys":
        return K.seq_of(K.T_UNKNOWN)
    if name == "copy":
        return receiver
    return K.T_NONE if name in ("update", "clear") else K.T_UNKNOWN


def _plain_python(ty: Ty) -> bool:
    if ty.kind == K.SEQ:
        return isinstance(ty.ref, Ty) and ty.ref.kind in K.PLAIN_KINDS
    return ty.kind in K.PLAIN_KINDS


def _holds_tensors(ty: Ty) -> bool:
    """A sequence whose elements are, or contain, tensors (`sorted(d.items())` of tensor values
    compares (key, tensor) tuples: Dynamo sorts only constants, GB0207 measured on 2.13)."""
    return ty.kind == K.SEQ and isinstance(ty.ref, Ty) and _has_tensor(ty.ref)


def _size_literal(walker, node: ast.Call, args: list[Ty]) -> bool:
    """`torch.tensor([w - 1, h - 1])` under torch.jit.trace: each size is read as a number (FL203)."""
    if walker.mode in TRACERS and args and _holds_size(args[0]):
        walker.report("FL203", node, "A size inside a tensor literal: the trace records the number it had")
        return True
    return False


def _anywhere(ty: Ty, test) -> bool:
    """`test` holds for `ty` or for an item or element of it, lists and tuples at any depth."""
    return test(ty) or ty.kind == K.SEQ and (any(_anywhere(item, test) for item in ty.items or ())
                                             or isinstance(ty.ref, Ty) and _anywhere(ty.ref, test))


def _holds_size(ty: Ty) -> bool:
    return _anywhere(ty, lambda t: t.shape_derived)


def _has_tensor(ty: Ty) -> bool:
    return _anywhere(ty, lambda t: t.maybe_tensor)


# --- builtins ----------------------------------------------------------------------------------
def builtin_call(walker, node: ast.Call, name: str, args: list[Ty], kwargs: dict) -> Ty:
    first = args[0] if args else K.T_NONE
    if name == "print":
        walker.report("FL110", node, "print() splits the graph: Dynamo cannot trace I/O",
                      fix=fix_for("FL110", walker, None, node))
        return K.T_NONE
    if name in ("float", "int", "bool", "complex") and first.is_tensor:
        walker.report("FL102", node, f"{name}() of a tensor reads its value on the host")
        return K.T_DATA
    if name in ("float", "int", "bool", "complex") and first.kind == K.NDARRAY:
        walker.report("FL104", node, f"{name}() of a NumPy array, which Dynamo traces as a tensor, reads its value")
        return K.T_DATA
    if name in ("float", "int", "bool", "complex") and first.shape_derived and first.kind in SIZE_KINDS:
        walker.report_size_read(node, f"{name}() of a size: the trace records the number it had")
    if name in ("float", "int", "complex"):
        return walker.host_number(Ty(K.INT if name == "int" else K.NUM, shape_derived=first.shape_derived)) \
            if first.kind != K.DATA else K.T_DATA
    if name == "bool":
        return K.T_BOOL if first.kind != K.DATA else K.T_DATA
    if name in ("str", "repr", "format", "ascii") and first.is_tensor:
        walker.report("FL114", node, f"{name}() of a tensor needs its values")
        return K.T_STR
    if name in ("str", "repr", "format", "ascii", "chr"):
        return K.T_STR
    if name in ("open", "input", "breakpoint", "exec", "eval"):
        walker.report("FL113", node, f"{name}() is I/O Dynamo cannot trace")
        return K.T_OBJ
    if name == "len":
        if first.kind == K.TENSOR:
            walker.report_size_read(node, "len() of a tensor: the trace records the length it had")
        return K.T_SHAPE_INT if first.kind in (K.TENSOR, K.SHAPE) else K.T_INT
    if name == "range":
        for arg, ty in zip(node.args, args):
            if ty.is_tensor:
                walker.report("FL102", arg, "range() over a tensor bound reads its value on the host")
        sized = any(t.shape_derived for t in args)
        return Ty(K.SEQ, ref=walker.host_number(Ty(K.INT, shape_derived=sized)), shape_derived=sized)
    if name in ("getattr", "hasattr", "setattr") and first.kind == K.LOGGER:
        walker.report("FL111", node, f"{name}() on a logging.Logger is not traceable")
    if name in ("min", "max") and any(t.shape_derived and t.kind in SIZE_KINDS for t in args):
        walker.report_size_read(node, f"{name}() compares sizes in Python: the trace keeps the winner")
    if name in ("zip", "enumerate") and any(t.kind == K.TENSOR for t in args):
        walker.report_size_read(node, f"{name}() over a tensor iterates it: the trace fixes the item count")
    key_types = _walk_key_lambdas(walker, node, name, first)
    if name in ("min", "max") and any(kw.arg == "key" for kw in node.keywords) and (
            _holds_tensors(first) or any(ty.maybe_tensor for ty in key_types)):
        walker.report("FL144", node, f"{name}() with key= over tensors: Dynamo's {name}() takes no key")
        element = walker.element_type(first)
        return element if element.maybe_tensor else K.T_DATA
    if name in ("sorted",) and _holds_tensors(first):
        walker.report("FL143", node, "sorted() over tensors compares their values in Python")
        return first
    if name in ("list", "tuple", "sorted", "reversed"):
        if first.kind == K.TENSOR:  # `tuple(argmax)`: the items iterating it gives
            return K.seq_of(walker.element_type(first))
        if first.kind == K.SHAPE:
            return K.T_SHAPE
        return first if first.kind == K.SEQ else K.seq_of(K.T_UNKNOWN)
    if name == "enumerate":
        return Ty(K.SEQ, ref=Ty(K.SEQ, items=(K.T_INT, walker.element_type(first))),
                  shape_derived=K.sized_by_shape(first))
    if name == "zip":
        elements = tuple(walker.element_type(arg) for arg in args)
        return Ty(K.SEQ, ref=Ty(K.SEQ, ref=_common_element(args), items=elements),
                  shape_derived=any(K.sized_by_shape(arg) for arg in args))
    if name in ("max", "min", "sum", "abs", "round", "pow"):
        if any(t.maybe_tensor or _holds_tensors(t) for t in args):
            return K.T_TENSOR
        if any(t.kind == K.DATA for t in args):
            return K.T_DATA
        if name in ("sum", "max", "min") and len(args) == 1 and first.kind == K.SEQ \
                and walker.element_type(first).kind in (K.UNKNOWN, K.OBJ):  # of what calls returned, say
            return K.T_UNKNOWN
        shape = any(t.shape_derived for t in args) or (first.kind == K.SHAPE)
        return Ty(K.NUM, shape_derived=shape)
    if name in ("any", "all"):
        if _holds_tensors(first) or first.maybe_tensor:
            walker.report("FL101", node, f"{name}() over tensors tests each one's truth value")
            return K.T_DATA
        if first.kind == K.SEQ and isinstance(first.ref, Ty) and first.ref.shape_derived:
            return K.T_SHAPE_BOOL  # `any(s % 8 for s in x.shape[-2:])`
        return K.T_BOOL
    if name == "super" and walker.function.cls is not None:
        bases = walker.module.base_classes(walker.function.cls)
        if bases:
            return Ty(K.MODULE if bases[0].is_module else K.OBJ, ref=bases[0])
        return K.T_OBJ
    if name == "map":
        return K.seq_of(K.T_UNKNOWN)
    if name == "dict":  # `dict(a=x, b=y)`: the keywords' values; `dict(pairs)`: the pairs' second items
        if node.args and not node.keywords:
            pair = walker.element_type(first)
            return Ty(K.DICT, ref=pair.items[1] if pair.kind == K.SEQ and pair.items and len(pair.items) == 2
                      else K.T_UNKNOWN)
        values = list(kwargs.values())
        same = not node.args and len(values) == len(node.keywords) and all(v == values[0] for v in values)
        return Ty(K.DICT, ref=(values[0] if values else None) if same else K.T_UNKNOWN)
    if name == "hash" and first.is_tensor:
        walker.report("FL106", node, "hash() of a tensor: tensor identity is not traceable")
        return K.T_DATA
    if name in BUILTIN_NON_TENSOR:
        return BUILTIN_NON_TENSOR[name]
    return K.T_UNKNOWN


def _walk_key_lambdas(walker, node: ast.Call, name: str, iterable: Ty) -> list[Ty]:
    """`sorted(xs, key=lambda t: t.sum().item())`: Dynamo runs the lambda on each element.
    Returns the types the lambdas evaluate to."""
    if name not in ("sorted", "min", "max", "map", "filter"):
        return []
    candidates = [kw.value for kw in node.keywords if kw.arg == "key"] + [a for a in node.args[:1]]
    element = walker.element_type(node.args[-1] and walker.expr(node.args[-1])) if name in ("map", "filter") \
        and len(node.args) > 1 else walker.element_type(iterable)
    results = []
    for candidate in candidates:
        if isinstance(candidate, ast.Lambda) and candidate.args.args:
            saved = dict(walker.env)
            walker.env[candidate.args.args[0].arg] = element
            results.append(walker.expr(candidate.body))
            walker.env = saved
        elif isinstance(candidate, ast.Attribute) and candidate.attr in ("get", "__getitem__"):
            table = walker.expr(candidate.value)  # `min(scores, key=scores.get)`: the dict's values
            if table.kind == K.DICT and isinstance(table.ref, Ty):
                results.append(table.ref)
    return results


def _common_element(args: list[Ty]) -> Ty:
    elements = [a.ref if a.kind == K.SEQ and isinstance(a.ref, Ty) else
                (K.T_TENSOR if a.kind == K.TENSOR else K.T_UNKNOWN) for a in args]
    return elements[0] if elements and all(e == elements[0] for e in elements) else K.T_UNKNOWN


# --- tensor methods ----------------------------------------------------------------------------
def random_value_argument(walker, node: ast.Call, name: str) -> None:
    """A random.randint/randrange/uniform value passed to an op that needs a Python number."""
    if name in RANDOM_SCALAR_OPS:
        return
    for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
        for part in arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else (arg,):
            if isinstance(part, ast.Name) and getattr(walker.env.get(part.id), "ref", None) == RANDOM_VALUE:
                walker.report("FL124", part, f"`{name}` takes the random.* value `{part.id}` as a Python "
                                             "number: Dynamo reads it on the host")
                return


def generator_argument(walker, node: ast.Call, kwargs: dict) -> None:
    """`generator=g` on a random op: Dynamo cannot pass a Generator into the graph (GB0055)."""
    generator = kwargs.get("generator")
    # `generator=None` traces; an optional parameter counts when it is annotated as a Generator
    if generator is not None and generator.kind != K.NONE and (not generator.optional or generator.ref == GENERATOR):
        walker.report("FL127", node, "a torch.Generator passed to a random op cannot enter the graph")


def tensor_method(walker, node: ast.Call, name: str, receiver: Ty, args: list[Ty], kwargs: dict) -> Ty:
    random_value_argument(walker, node, name)
    generator_argument(walker, node, kwargs)
    if name == "item":
        walker.report("FL102", node, "`.item()` reads the tensor's value on the host",
                      fix=fix_for("FL102", walker, None, node))
        return K.T_DATA
    if name == "new_tensor" and _size_literal(walker, node, args):
        return K.T_TENSOR
    if name == "numpy" and walker.mode in TRACERS:
        walker.report("FL203", node, "`.numpy()` under torch.jit.trace: the trace keeps the array's values as "
                                     "constants")
        return K.T_DATA
    if name == "tolist":
        if receiver.integer:
            walker.report("FL104", node, "`.tolist()` of an integer tensor needs its values on the host")
        else:
            walker.report("FL103", node, "`.tolist()` materialises every element as a Python value")
        return K.seq_of(K.T_DATA)
    if name in K.DYNAMIC_SHAPE_OPS or (name == "repeat_interleave" and args and args[0].maybe_tensor):
        walker.report("FL105", node, f"`.{name}()` returns a data-dependent number of elements")
        return K.T_TENSOR_SEQ if _keyword_is(node, "as_tuple", True) or _unique_with_extras(name, node, 0) else \
            K.T_INT_TENSOR if name in ("nonzero", "argwhere", "bincount") else K.T_TENSOR
    if name == "requires_grad_":
        walker.report("FL140", node, "`requires_grad_()` inside compiled code")
        return receiver
    if name == "random_" or name == "uniform_" and "from" in kwargs:  # Dynamo refuses them (GB0107)
        walker.report("FL121", node, f"`Tensor.{name}()` is not traceable: use the out-of-place op")
        return receiver
    if name in ("resize_", "resize_as_"):  # measured on 2.13: not traceable (GB0148)
        walker.report("FL121", node, f"`Tensor.{name}()` is not traceable: the graph breaks")
        return receiver
    if name in ("apply_", "map_", "map2_"):
        walker.report("FL121", node, f"`Tensor.{name}()` calls a Python function per element: not traceable")
        return receiver
    if name == "storage":  # the legacy TypedStorage (untyped_storage() traces)
        walker.report("FL126", node, "`Tensor.storage()` returns a TypedStorage Dynamo cannot trace")
        return K.T_OBJ
    if name in ("equal", "allclose"):
        walker.report("FL104", node, f"`.{name}()` returns a Python bool computed from tensor data")
        return K.T_DATA
    if name == "backward":
        walker.report("FL142", node, "`.backward()` inside compiled code runs outside the graph")
        return K.T_NONE
    if name in ("__bool__", "__int__", "__float__", "__index__"):
        walker.report("FL102", node, f"`{name}` reads the tensor's value on the host")
        return K.T_DATA
    if name in ("items", "keys"):  # no Tensor method: a parameter taken for a tensor is a dict of them
        return dict_method(name, Ty(K.DICT, ref=receiver))
    if name in K.TENSOR_METHODS_NON_TENSOR:
        if name in ("stride",) and (args or kwargs):
            return K.T_INT
        return K.TENSOR_METHODS_NON_TENSOR[name]
    if name == "size":
        return K.T_SHAPE_INT if (args or kwargs) else K.T_SHAPE
    has_dim = bool(args) or "dim" in kwargs or "axis" in kwargs
    if name in K.SEQUENCE_METHODS or (name in K.DIM_TUPLE_METHODS and has_dim and name not in ("amax", "amin")):
        return _tensor_tuple(name)
    boolean = name in K.BOOL_RESULT or (name in K.LAYOUT_PRESERVING and receiver.boolean)
    integer = name in K.INT_RESULT or (name in K.LAYOUT_PRESERVING and receiver.integer)
    if name == "to" and args and args[0].kind == K.DTYPE:
        boolean, integer = False, False
    zero = (name in K.FULL_REDUCTIONS and not has_dim) or (receiver.zero_dim and name in K.LAYOUT_PRESERVING)
    return K.tensor(zero, boolean, integer)


def _is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def argument_type(walker, arg: ast.expr) -> Ty:
    """An argument's type; a bool written there, or a module-level bool constant nothing
    rebinds (Dynamo guards on it), keeps its value: the callee's `if flag:` folds."""
    constant = walker.module_constant(arg.id) if isinstance(arg, ast.Name) and arg.id not in walker.env else arg
    if isinstance(constant, ast.Constant) and isinstance(constant.value, bool):
        return K.bool_literal(constant.value)
    return walker.expr(arg)


def call_function_value(walker, node: ast.Call, callee: Ty, args: list[Ty], kwargs: dict) -> Ty:
    """Calls a FUNC value: a function, a bound method, a decorator's wrapper, or any of several
    functions (a registry entry)."""
    ref = callee.ref
    if isinstance(ref, FunctionInfo):
        return walker.call_user(node, ref, args, kwargs)
    if isinstance(ref, K.Bound):
        return walker.call_method(node, ref.function, args, kwargs, ref.receiver)
    if isinstance(ref, K.Wrapped):
        return walker.call_user(node, ref.function, args, kwargs, closure=ref.closure)
    if isinstance(ref, K.Partial):
        return call_function_value(walker, node, ref.function, [*ref.args, *args], {**dict(ref.kwargs), **kwargs})
    if type(ref) is tuple:  # noqa: E721 (not Wrapped)
        # a registry entry (`LOSSES[name]`), a list of hooks: whichever function it is may run
        return functools.reduce(K.join, [call_function_value(walker, node, callee.but(ref=one), args, kwargs)
                                         for one in ref])
    return K.T_UNKNOWN


def partial_of(args: list[Ty], kwargs: dict[str, Ty]) -> Ty:
    """`functools.partial(fn, ...)` of a workspace function (the calls it makes are followed)."""
    if not args or args[0].kind != K.FUNC:
        return K.T_UNKNOWN
    return Ty(K.FUNC, ref=K.Partial(args[0], tuple(args[1:]), tuple(sorted(kwargs.items()))))


def object_method(walker, node: ast.Call, receiver: Ty, name: str, args: list[Ty], kwargs: dict) -> Ty | None:
    """`obj.name(...)` (`obj(...)`: `__call__`) on an instance of a workspace class, or of any of
    several (one of a list of transforms): each one's method may run. None: a class lacks it."""
    classes = receiver.ref if type(receiver.ref) is tuple else (receiver.ref,)  # noqa: E721
    results = []
    for cls in classes:
        method = cls.lookup_method(name) if isinstance(cls, ClassInfo) else None
        if method is None and len(classes) == 1 and isinstance(cls, ClassInfo):
            attribute = walker.module_attribute(receiver, name)  # `self._better = lambda a, b: ...`
            return call_function_value(walker, node, attribute, args, kwargs) if attribute.kind == K.FUNC else None
        if method is None:
            return None
        one = receiver if len(classes) == 1 else Ty(receiver.kind, ref=cls)
        results.append(walker.call_method(node, method, args, kwargs, one))
    return functools.reduce(K.join, results)


# --- modules -----------------------------------------------------------------------------------
def module_method(walker, node: ast.Call, name: str, receiver: Ty, args: list[Ty], kwargs: dict) -> Ty:
    cls = receiver.ref
    if isinstance(cls, ClassInfo):
        method = cls.lookup_method(name)
        if method is not None:
            return walker.call_method(node, method, args, kwargs, receiver)
    attribute = walker.module_attribute(receiver, name)
    if attribute.kind == K.MODULE:  # a sub-module: `self.proj(x)`
        return module_call(walker, node, attribute, args, kwargs)
    if attribute.kind == K.FUNC:  # `self.hook = fn` / `self.step = self._advance` in __init__
        return call_function_value(walker, node, attribute, args, kwargs)
    if attribute.kind == K.OBJ:  # `self.tokenizer(prompts)`: a workspace object's __call__
        returns = object_method(walker, node, attribute, "__call__", args, kwargs)
        if returns is not None:
            return returns
    if name in ("parameters", "buffers", "children", "modules",
                "named_parameters", "named_buffers", "named_children", "named_modules"):
        element = K.T_TENSOR if "param" in name or "buffer" in name else Ty(K.MODULE)
        return K.seq_of(Ty(K.SEQ, items=(K.T_STR, element)) if name.startswith("named_") else element)
    if name == "forward":
        return module_call(walker, node, receiver, args, kwargs)
    if name in ("register_buffer", "register_parameter"):
        # measured on 2.13: the new buffer changes the module Dynamo guards on; the next call recompiles
        walker.report("FL302", node, f"`{name}()` in compiled code changes the module: the next call recompiles")
        return K.T_NONE
    if name == "get_submodule":
        return Ty(K.MODULE)
    return K.T_UNKNOWN


def module_call(walker, node: ast.Call, module: Ty, args: list[Ty], kwargs: dict) -> Ty:
    cls = module.ref
    if isinstance(cls, ClassInfo):
        forward = cls.lookup_method("forward")
        if forward is not None:
            return walker.call_user(node, forward, args, kwargs, receiver=module)
        return K.T_TENSOR
    if cls == "torch.nn.Sequential" and module.items:
        value = args[0] if args else K.T_UNKNOWN
        for stage in module.items:
            value = module_call(walker, node, stage, [value], {})
        return value
    if isinstance(cls, tuple):  # `A() if c else B()`: either may run
        results = [module_call(walker, node, module.but(ref=alternative), args, kwargs) for alternative in cls]
        return functools.reduce(K.join, results)
    if cls is None or cls in ("torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList"):
        return K.T_UNKNOWN  # a module of unknown class may return anything, a tuple too
    if cls in SIZE_CHECKING_MODULES:
        walker.report_size_read(node, f"`{cls}` checks its input's sizes in Python: the trace bakes the checks")
    if cls in RNN_MODULES:
        walker.report("FL123", node, f"`{cls}` is not traced by Dynamo (allow_rnn=False)")
        walker.skip_frame(node, f"`{cls.rsplit('.', 1)[1]}` is not traced")
        walker.report_size_read(node, f"`{cls}` checks its input's and state's sizes in Python: the trace bakes "
                                      "the checks")
        state = K.T_TENSOR_SEQ if cls == "torch.nn.LSTM" else K.T_TENSOR  # (h, c) or h
        return Ty(K.SEQ, ref=K.T_UNKNOWN, items=(K.T_TENSOR, state))
    return K.T_TENSOR


# --- library calls -----------------------------------------------------------------------------
def construct(walker, node: ast.Call, cls: ClassInfo, args: list[Ty], kwargs: dict) -> Ty:
    """An object of a workspace class: its type, with what its `__init__` stores."""
    pending, seen = [cls], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        skipped = SKIPPED_BASE_CLASSES.intersection(current.bases)
        if skipped:
            walker.report("FL121", node, f"`{cls.name}` extends `{min(skipped)}`, whose `__init__` Dynamo skips: "
                                         "the graph breaks")
            break
        pending.extend(current.module.base_classes(current))
    return walker.analysis.instance_type(walker, cls, args, kwargs)


def library_call(walker, node: ast.Call, dotted: str, args: list[Ty], kwargs: dict) -> Ty:
    if dotted.startswith("torch."):
        return torch_call(walker, node, dotted, args, kwargs)
    if dotted in DICT_CLASSES:
        return Ty(K.DICT, ref=K.T_UNKNOWN)
    if dotted == "collections.deque":
        return K.seq_of(K.T_UNKNOWN)
    head, _, last = dotted.rpartition(".")
    if dotted in SKIPPED_CALLS:
        walker.report("FL121", node, f"`{dotted}()` is not traceable: Dynamo skips it and the graph breaks")
        return K.T_NUM
    if dotted in STREAM_CALLS or last in ("write", "writelines") and head.startswith("sys."):
        walker.report("FL113", node, f"`{dotted}()` writes to a stream")
        return K.T_NONE
    if head == "logging" and last in LOG_METHODS:
        walker.report("FL111", node, "Logging call: logging is not traceable",
                      fix=fix_for("FL111", walker, None, node))
        return K.T_NONE
    if dotted == "logging.getLogger":
        return K.T_LOGGER
    if dotted == "warnings.warn":
        walker.report("FL112", node, "warnings.warn() is skipped by Dynamo: the graph breaks",
                      fix=fix_for("FL112", walker, None, node))
        return K.T_NONE
    if dotted == "copy.deepcopy":
        if args and not _plain_python(args[0]):  # deepcopy of plain Python data traces fine
            walker.report("FL120", node, "copy.deepcopy() of tensors or modules is not traceable")
        return args[0] if args else K.T_UNKNOWN
    if dotted in ("dataclasses.asdict", "dataclasses.astuple"):
        # they deep-copy every field (measured on 2.13: GB4198); a dataclass in model code holds tensors
        if args and (args[0].kind == K.OBJ or not _plain_python(args[0])):
            walker.report("FL120", node, f"`{dotted}()` deep-copies the fields, tensors too: not traceable")
        return Ty(K.DICT) if last == "asdict" else K.seq_of(K.T_UNKNOWN)
    if dotted in ("io.BytesIO", "io.StringIO"):
        walker.report("FL113", node, f"`{dotted}()` inside compiled code")
        return Ty(K.OBJ, ref=dotted)
    if dotted == "copy.copy":
        walker.report("FL121", node, "copy.copy() is skipped by Dynamo: the graph breaks")
        return args[0] if args else K.T_UNKNOWN
    if head == "math":
        if any(t.is_tensor for t in args):
            walker.report("FL104", node, f"`{dotted}` of a tensor converts it to a Python number")
            return K.T_DATA
        if walker.mode == COMPILE and any(t.kind == K.NDARRAY for t in args):  # Dynamo traces it as a tensor
            walker.report("FL104", node, f"`{dotted}` of an array traced as a tensor converts it to a Python number")
            return K.T_DATA
        if any(t.kind == K.DATA for t in args):
            return K.T_DATA
        shape = any(t.shape_derived for t in args)
        if shape:
            walker.report_size_read(node, f"`{dotted}` of a size: the trace records the number it gave")
        return walker.host_number(Ty(K.INT if last in ("floor", "ceil", "gcd", "lcm", "prod", "comb", "perm",
                                                       "isqrt") else K.NUM, shape_derived=shape))
    if head in ("numpy", "np") or dotted.startswith("numpy."):
        # torch.jit.trace leaves NumPy to NumPy: host values, silent until they become tensors again
        return K.T_DATA if walker.mode in TRACERS else numpy_call(walker, node, dotted, args, kwargs)
    if dotted == "random.Random":
        return Ty(K.OBJ, ref=dotted)
    if head == "random" and last[:1].islower():
        if last in RANDOM_VALUE_CALLS:
            return Ty(K.TENSOR, zero_dim=True, ref=RANDOM_VALUE)
        walker.report("FL121", node, f"`{dotted}()` is skipped by Dynamo: the graph breaks")
        return K.T_NUM
    if head in SKIPPED_MODULES:
        walker.report("FL121", node, f"`{dotted}()` is implemented in C: Dynamo skips it and the graph breaks")
        return K.T_UNKNOWN
    if dotted == "functools.partial":
        return partial_of(args, kwargs)
    if dotted in ("functools.reduce", "operator.itemgetter"):
        return K.T_UNKNOWN
    if dotted.split(".", 1)[0] in SKIPPED_LIBRARIES and dotted not in TRACEABLE_LIBRARY_CALLS:
        message = f"`{dotted}()` is third-party code Dynamo skips or cannot trace (compiled extension): the graph breaks"
        if dotted.startswith(LIBRARY_FRAMES_TRACED):
            walker.report_own_frame("FL121", node, message, dotted)
        else:
            walker.report("FL121", node, message)
        return K.T_UNKNOWN
    if dotted.startswith("einops."):
        return K.T_TENSOR
    return K.T_UNKNOWN


def numpy_call(walker, node: ast.Call, dotted: str, args: list[Ty], kwargs: dict) -> Ty:
    path = dotted.split(".", 1)[1]  # "nanmean", "random.beta", "add.at"
    namespace, _, last = path.rpartition(".")
    if last in ("at", "reduceat", "outer", "accumulate") and namespace and namespace != "random":
        walker.report("FL122", node, f"`{dotted}`: NumPy ufunc methods are not traced")
        return K.T_NONE
    if namespace and namespace.split(".")[0] not in ("random", "linalg", "fft"):
        walker.report("FL122", node, f"`{dotted}`: torch._numpy has no `{namespace}`, Dynamo skips it")
        return K.T_UNKNOWN
    if namespace == "random":
        if last in NUMPY_GENERATOR_CLASSES:
            walker.report("FL122", node, f"`{dotted}` has no torch._numpy equivalent: Dynamo cannot trace it")
            return K.T_NUMPY_GENERATOR
        if last not in NUMPY_RANDOM:
            walker.report("FL122", node, f"`{dotted}` has no torch._numpy equivalent: Dynamo cannot trace it")
            # NumPy draws it after the break: a plain number, unless asked for an array
            return K.T_NDARRAY if "size" in kwargs else K.T_DATA
        if last == "choice":
            walker.report("FL104", node, f"`{dotted}` checks its probabilities on the host")
            return K.T_NDARRAY
        size_at = NUMPY_RANDOM_SIZE_AT.get(last)
        if (not args and not kwargs) if last in ("rand", "randn") else (
                size_at is not None and len(args) <= size_at and "size" not in kwargs):
            walker.report("FL104", node, f"`{dotted}()` without a size returns a Python number read from a tensor")
            return K.T_DATA
        return K.T_NDARRAY
    if path in NUMPY_VALUE_CHECKED:
        walker.report("FL122", node, f"`{dotted}` checks its input's values in Python (torch._numpy): "
                                     "Dynamo reads them on the host")
        return K.T_NDARRAY
    if path in NUMPY_BOOL_RESULT:
        walker.report("FL104", node, f"`{dotted}` returns a Python bool computed from the array's values")
        return K.T_DATA
    if path in NUMPY_DATA_DEPENDENT_SIZE or path == "where" and len(args) == 1 and not kwargs:
        walker.report("FL105", node, f"`{dotted}` returns a data-dependent number of elements")
        return K.T_NDARRAY
    if path in NUMPY_PREDICATES:
        return Ty(K.NDARRAY, boolean=True)
    if path in NUMPY_UNSUPPORTED:
        walker.report("FL122", node, f"`{dotted}` has no torch._numpy equivalent: Dynamo cannot trace it")
        return K.T_NDARRAY
    if args and all(ty.kind in (K.INT, K.NUM, K.BOOL) for ty in args) and not namespace \
            and last not in NUMPY_ARRAY_BUILDERS:
        return Ty(K.NUM, shape_derived=any(ty.shape_derived for ty in args))
    return K.T_NDARRAY


# Factories whose positional arguments are sizes or bounds (a tensor there is read on the host).
SIZED_BY_ARGUMENTS = {"arange", "zeros", "ones", "empty", "rand", "randn", "eye", "randperm"}


def torch_call(walker, node, dotted: str, args: list[Ty], kwargs: dict) -> Ty:
    if dotted in SPARSE_CONSTRUCTORS:
        walker.report("FL121", node, f"`{dotted}` is skipped by Dynamo: the graph breaks")
        return K.T_SPARSE
    if K.T_SPARSE in args:
        walker.report("FL121", node, f"`{dotted}` of a sparse tensor: Dynamo cannot put sparse tensors in a graph")
        return K.T_TENSOR
    if dotted in SKIPPED_CALLS:
        walker.report("FL121", node, f"`{dotted}` is skipped by Dynamo: the graph breaks")
        return K.T_UNKNOWN
    if dotted in TORCH_HOST_QUERIES:
        walker.report("FL126", node, f"`{dotted}()` returns a Python value Dynamo cannot trace")
        return TORCH_HOST_QUERIES[dotted]
    if dotted == GENERATOR:
        walker.report("FL127", node, "a torch.Generator cannot be created inside compiled code")
        return K.T_GENERATOR
    if dotted in VALUE_ASSERTIONS:
        walker.report("FL101", node, f"`{dotted}` compares tensor values in Python branches")
        return K.T_NONE
    generator_argument(walker, node, kwargs)
    if walker.mode in TRACERS and (dotted == "torch.from_numpy" or dotted in ("torch.as_tensor", "torch.Tensor")
                                   and args and args[0].kind in (K.SEQ, K.SHAPE, K.NDARRAY, K.DATA)):
        walker.report("FL203", node, f"`{dotted}` under torch.jit.trace: the trace keeps the result as a constant")
        return K.T_TENSOR
    if dotted == "torch.tensor" and _size_literal(walker, node, args):
        return K.T_TENSOR
    if dotted in GRAPH_BREAK_CALLS:
        walker.report("FL131", node, "torch._dynamo.graph_break() ends the graph here")
        return K.T_NONE
    if dotted in AUTOGRAD_CALLS:
        walker.report("FL142", node, f"`{dotted}` inside compiled code runs outside the graph")
        return K.T_TENSOR_SEQ
    namespace, _, name = dotted.rpartition(".")
    if namespace == "torch.autograd.functional" and name in AUTOGRAD_FUNCTIONAL:
        walker.report("FL142", node, f"`{dotted}` takes a Python function Dynamo cannot put in the graph; "
                                     "`torch.func` transforms trace")
        return AUTOGRAD_FUNCTIONAL[name]
    if dotted in PARAMETER_CALLS:
        walker.report("FL141", node, "nn.Parameter created inside compiled code")
        return K.T_TENSOR
    if dotted in K.TORCH_NON_TENSOR:
        return K.TORCH_NON_TENSOR[dotted]
    if dotted in ("torch.compiler.disable", "torch._dynamo.disable"):
        return K.T_OBJ
    if namespace in ("torch", "torch.special", "torch.linalg", "torch.fft", "torch.nn.functional"):
        random_value_argument(walker, node, name)
        first = args[0] if args else K.T_NONE
        if name in K.DYNAMIC_SHAPE_OPS or (name == "repeat_interleave" and K.is_dynamic_repeat(args)) \
                or (name == "where" and len(args) == 1 and not kwargs):
            walker.report("FL105", node, f"`{dotted}` returns a data-dependent number of elements")
            return K.T_TENSOR_SEQ if name == "where" or _keyword_is(node, "as_tuple", True) \
                or _unique_with_extras(name, node, 1) else \
                K.T_INT_TENSOR if name in ("nonzero", "argwhere", "bincount") else K.T_TENSOR
        if namespace == "torch.nn.functional" and (name in SIZE_CHECKING_FUNCTIONS or (
                name == "embedding" and _padding_index_checked(walker, node)) or (
                name == "batch_norm" and _keyword_is(node, "training", True))):
            walker.report_size_read(node, f"`{dotted}` checks its input's sizes in Python: the trace bakes the checks")
        elif namespace == "torch.nn.functional" and name in SIZE_LIST_CHECKED:
            keyword, position = SIZE_LIST_CHECKED[name]
            sizes = kwargs.get(keyword) or (args[position] if len(args) > position else K.T_NONE)
            if _holds_size(sizes):
                walker.report_size_read(node, f"`{dotted}` compares the sizes it is given in Python: the trace "
                                              "keeps the outcome")
        if name == "one_hot" and _classes_from_data(node):
            walker.report("FL105", node, f"`{dotted}` without num_classes sizes its output from the data")
            return K.T_INT_TENSOR
        if name in ("equal", "allclose", "is_nonzero"):
            walker.report("FL104", node, f"`{dotted}` returns a Python bool computed from tensor data")
            return K.T_DATA
        if name in SIZED_BY_ARGUMENTS and any(ty.is_tensor for ty in args):
            # measured on 2.13: `torch.arange(lengths.max())` reads the value to size the result (GB0033)
            walker.report("FL104", node, f"`{dotted}` sized by a tensor's value needs that value on the host")
            return K.tensor(False, False, name in ("arange", "randperm", "randint"))
        if name == "tensor_split" and len(args) > 1 and args[1].maybe_tensor:
            walker.report("FL104", node, f"`{dotted}` at tensor indices needs their values on the host")
            return K.T_TENSOR_SEQ
        if _requires_grad_true(node):
            walker.report("FL140", node, "Tensor created with requires_grad=True inside compiled code")
            return K.T_TENSOR
        has_dim = len(args) > 1 or "dim" in kwargs
        if name in K.TORCH_SEQUENCE_FUNCS or (name in K.DIM_TUPLE_METHODS and has_dim):
            return _tensor_tuple(name)
        boolean = name in K.BOOL_RESULT or (name in K.LAYOUT_PRESERVING and first.boolean) or (
            kwargs.get("dtype") is not None and _is_bool_dtype(node))
        integer = name in K.INT_RESULT or name in ("arange",) and all(t.kind == K.INT for t in args) or \
            name in ("stack", "cat", "concat") and first.kind == K.SEQ and isinstance(first.ref, Ty) and first.ref.integer
        zero = name in K.FULL_REDUCTIONS and not has_dim
        return K.tensor(zero, boolean, integer)
    if dotted in ("torch.nn.ModuleList", "torch.nn.ParameterList") and args:
        # Keep the element type: `for block in self.blocks: block(x)` inlines Block.forward.
        element = args[0].ref if args[0].kind == K.SEQ and isinstance(args[0].ref, Ty) else K.T_UNKNOWN
        return K.seq_of(element)
    if dotted == "torch.nn.Embedding" and _padding_index_checked(walker, node):
        return Ty(K.MODULE, ref=CHECKED_EMBEDDING)
    if dotted == "torch.nn.Sequential":  # keep the stages: a call runs each in turn
        stages = tuple(walker.element_type(ty) if isinstance(arg, ast.Starred) else ty
                       for arg, ty in zip(node.args, args))
        return Ty(K.MODULE, ref=dotted, items=stages if all(s.kind == K.MODULE for s in stages) else None)
    if namespace.startswith("torch.nn") and name[:1].isupper():
        return Ty(K.MODULE, ref=dotted)
    if namespace in ("torch.nn.init",):
        return K.T_TENSOR
    if name[:1].isupper():
        return Ty(K.OBJ, ref=dotted)
    return K.T_TENSOR if namespace.startswith(("torch.ops", "torch.distributions")) else K.T_UNKNOWN


def _tensor_tuple(name: str) -> Ty:
    """The tensors a sequence-returning op gives: (values, indices) for the ops that return both."""
    return VALUES_INDICES if name in VALUES_INDICES_OPS else K.T_TENSOR_SEQ


def _unique_with_extras(name: str, node: ast.Call, tensor_args: int) -> bool:
    """`torch.unique(x, return_inverse=True)` / `x.unique_consecutive(return_counts=c)`: a tuple.
    `tensor_args`: the positional arguments before the flags (the input, for the function)."""
    if name not in ("unique", "unique_consecutive"):
        return False
    flags = [k.value for k in node.keywords if k.arg in ("return_inverse", "return_counts")]
    flags += node.args[tensor_args + (name == "unique"):][:2]  # after `sorted` (unique only)
    return any(not (isinstance(flag, ast.Constant) and not flag.value) for flag in flags)


def _keyword_is(node: ast.Call, name: str, value) -> bool:
    return any(keyword.arg == name and isinstance(keyword.value, ast.Constant) and keyword.value.value is value
               for keyword in node.keywords)


def _padding_index_checked(walker, node: ast.Call) -> bool:
    """`nn.Embedding(n, d, padding_idx=p)` / `F.embedding(x, w, p)` with p neither 0 nor None
    (a module-level constant such as `PAD_ID = 0` is read)."""
    index = node.args[2] if len(node.args) > 2 else next(
        (keyword.value for keyword in node.keywords if keyword.arg == "padding_idx"), None)
    if isinstance(index, ast.Name) and index.id not in walker.env:
        index = walker.module.globals.get(index.id, index)
    return index is not None and not (isinstance(index, ast.Constant) and index.value in (0, None))


def _classes_from_data(node: ast.Call) -> bool:
    """`F.one_hot(x)` / `num_classes=-1`: the class count is x.max() + 1, read from the data."""
    classes = node.args[1] if len(node.args) > 1 else next(
        (keyword.value for keyword in node.keywords if keyword.arg == "num_classes"), None)
    return classes is None or (isinstance(classes, ast.UnaryOp) and isinstance(classes.op, ast.USub)
                               and isinstance(classes.operand, ast.Constant) and classes.operand.value == 1)


def _requires_grad_true(node: ast.Call) -> bool:
    return _keyword_is(node, "requires_grad", True)


def _is_bool_dtype(node: ast.Call) -> bool:
    for keyword in node.keywords:
        if keyword.arg == "dtype" and isinstance(keyword.value, ast.Attribute) and keyword.value.attr == "bool":
            return True
    return False
