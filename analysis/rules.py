"""The rule table: one entry per finding kind, with Dynamo's own id where one corresponds.

Ids are stable (`# fuselens: ignore[FL102]`, settings, fixtures all name them).
`gb_id`/`gb_type` come from torch/_dynamo/graph_break_registry.json (torch 2.13); each
was checked against what real Dynamo logs for the construct (tests/corpus).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GRAPH_BREAK = "graph-break"
TRACE_UNSAFE = "trace-unsafe"
RECOMPILE = "recompile"
PERF = "perf"

# The rule reference ships with the repository (docs/rules.md, generated from this table).
_DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
DOCS_URL = _DOCS.as_uri() + "#"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    category: str
    summary: str
    why: str
    fix_hint: str
    gb_id: str | None = None
    gb_type: str | None = None

    @property
    def url(self) -> str:
        return DOCS_URL + self.code.lower()


_RULES = [
    # --- graph breaks under torch.compile -------------------------------------------------
    Rule("FL101", "data-dependent-branch", GRAPH_BREAK,
         "Branch on a tensor's value",
         "Dynamo traces one path through the code. An `if`, `while`, ternary, `and`/`or`/`not` or "
         "comprehension filter whose condition depends on tensor *data* cannot be decided while "
         "tracing, so the graph ends here and Python evaluates the condition eagerly.",
         "Compute both sides and select with `torch.where(cond, a, b)`, or use `torch.cond`.",
         "GB0170", "Data-dependent branching"),
    Rule("FL102", "tensor-item", GRAPH_BREAK,
         "Tensor converted to a Python number",
         "`.item()`, `float(t)`, `int(t)`, `bool(t)` and using a tensor as a Python index need the "
         "value on the host, which does not exist while tracing (capture_scalar_outputs=False).",
         "Keep the value as a 0-d tensor (e.g. `x * t` instead of `x * t.item()`), or set "
         "`torch._dynamo.config.capture_scalar_outputs = True`.",
         "GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
    Rule("FL103", "tensor-tolist", GRAPH_BREAK,
         "Tensor converted to a Python list",
         "`.tolist()` materialises every element as a Python value; Dynamo cannot trace that for "
         "floating tensors and needs data-dependent values for integer ones.",
         "Keep the data in tensors; index or reduce instead of iterating a Python list.",
         "GB0109", "Tensor.tolist() with non-integer tensor"),
    Rule("FL104", "data-dependent-op", GRAPH_BREAK,
         "Operation needs a tensor's value on the host",
         "Math on a tensor through `math.*`, indexing with a 0-d tensor, or `.tolist()` of an "
         "integer tensor reads data that only exists at run time.",
         "Use the `torch.*` equivalent (e.g. `torch.sqrt`), or keep indices as tensors with "
         "`torch.gather`/`index_select`.",
         "GB0033", "Data dependent operator"),
    Rule("FL105", "dynamic-output-shape", GRAPH_BREAK,
         "Output shape depends on tensor values",
         "`nonzero`, boolean-mask indexing, `unique`, `masked_select`, `bincount`, "
         "`repeat_interleave` with tensor repeats produce a shape only known at run time "
         "(capture_dynamic_output_shape_ops=False).",
         "Keep a static shape: `torch.where(mask, x, 0)` instead of `x[mask]`, or set "
         "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`.",
         "GB0036", "Dynamic shape operator"),
    Rule("FL106", "tensor-identity", GRAPH_BREAK,
         "Tensor identity used as a value",
         "Comparing `data_ptr()` results or hashing a tensor asks for run-time identity that a "
         "traced graph does not have.",
         "Compare tensors by value (`torch.equal`) outside the compiled region, or pass a flag in.",
         "GB5976", "Data pointer comparison"),
    Rule("FL110", "print", GRAPH_BREAK,
         "print() in compiled code",
         "Dynamo cannot put I/O in a graph; every `print` splits the graph in two (and inside "
         "`try`/`with` it can make Dynamo skip the whole frame).",
         "Remove it, or guard it with `if not torch.compiler.is_compiling():`.",
         "GB0059", "Failed to trace builtin operator"),
    Rule("FL111", "logging", GRAPH_BREAK,
         "logging call in compiled code",
         "`logging.Logger` methods are not traceable outside export, and neither is reading, "
         "setting or probing (`getattr`/`hasattr`) a logger's attributes.",
         "Log outside the compiled function, or guard with `torch.compiler.is_compiling()`.",
         "GB0291", "logging.Logger method not supported for non-export cases"),
    Rule("FL112", "warnings", GRAPH_BREAK,
         "warnings.warn() in compiled code",
         "Dynamo treats `warnings` as a skipped module; the call runs in Python between graphs.",
         "Warn once outside the compiled function, or guard with `torch.compiler.is_compiling()`.",
         "GB0007", "Attempted to call function marked as skipped"),
    Rule("FL133", "comprehension-over-mapping-breaks", GRAPH_BREAK,
         "Graph break inside a comprehension over a dict or module container",
         "A comprehension is a function of its own, called with an iterator over its first iterable. "
         "To resume after a graph break inside it, Dynamo must rebuild that iterator, and it cannot "
         "rebuild one over a dict (`.items()`, `.keys()`, `.values()`) or over an `nn.ModuleList`, "
         "`nn.Sequential` or `nn.ModuleDict` (which iterate a dict). So it gives up on the enclosing "
         "function: the rest of it runs eagerly (measured on 2.13).",
         "Fix the break inside, or iterate a list: `[f(v) for k, v in list(d.items())]`, or a plain "
         "`for` loop whose body has no break.",
         "GB0092", "Reconstruction failure"),
    Rule("FL134", "comprehension-over-generator-breaks", GRAPH_BREAK,
         "Graph break inside a generator expression, or a comprehension over `enumerate` or a generator",
         "To resume after a graph break inside a comprehension, Dynamo must rebuild the iterator it "
         "runs over. A generator (a generator expression itself, `enumerate(...)`, "
         "`model.named_parameters()`) cannot be rebuilt without running it out, so Dynamo gives up "
         "on the enclosing function: the rest of it runs eagerly (measured on 2.13).",
         "Fix the break inside; iterate `range(len(xs))` instead of `enumerate(xs)`; use a list "
         "comprehension instead of `sum(... for ...)`/`any(... for ...)`.",
         "GB8335", "Generator reconstruction with mutations"),
    Rule("FL135", "comprehension-frame-untraceable", GRAPH_BREAK,
         "Comprehension run by Python: Dynamo cannot iterate what it is handed",
         "After a graph break inside a comprehension, or in a part of the function Dynamo skipped, "
         "Python calls the comprehension, and Dynamo compiles its frame when that frame holds a "
         "tensor (it closes over one, or over a module, or names `torch`). The frame's input is an "
         "iterator, and Dynamo can only trace a tuple or range iterator there: over a list, `zip`, "
         "`enumerate`, a dict or a generator the frame ends in a graph break at once (\"Missing "
         "tp_iternext\", measured on 2.13) and runs eagerly.",
         "Fix the break that sends the comprehension to Python; or iterate a tuple or a `range`.",
         "GB4347", "Missing tp_iternext"),
    Rule("FL113", "stream-write", GRAPH_BREAK,
         "Writing to a stream or file in compiled code",
         "`sys.stdout.write`, `open()` and file methods are side effects Dynamo cannot trace.",
         "Move I/O out of the compiled function.",
         "GB0156", "Unsupported method call"),
    Rule("FL114", "tensor-to-string", GRAPH_BREAK,
         "Tensor formatted as a string",
         "`str(t)`/`repr(t)`/`format` of a tensor needs its values. (An f-string alone is traced "
         "lazily; the break happens where the string is used.)",
         "Format outside the compiled function.",
         "GB0569", "repr() on tensor"),
    Rule("FL116", "join-tensor-text", GRAPH_BREAK,
         "Joining strings formatted from tensors",
         "An f-string of a tensor (`f\"{k}={v.mean():.2f}\"`) is kept unformatted while Dynamo traces; "
         "`str.join` over such strings is a method call it cannot trace (measured on 2.13, over a list "
         "or a generator), so the graph breaks there.",
         "Build the message outside the compiled function, or log the tensors' values after it returns.",
         "GB0156", "Unsupported method call"),
    Rule("FL115", "unsupported-context-manager", GRAPH_BREAK,
         "Context manager Dynamo cannot trace",
         "Locks and other non-torch context managers cannot be entered inside a graph.",
         "Take the lock outside the compiled function.",
         "GB0142", "Unsupported context manager"),
    Rule("FL120", "deepcopy", GRAPH_BREAK,
         "copy.deepcopy() in compiled code",
         "Dynamo does not trace `copy.deepcopy` of tensors or modules.",
         "Use `t.clone()` for tensors; copy modules outside the compiled region.",
         "GB4198", "Attempted to copy.deepcopy a tensor"),
    Rule("FL121", "untraceable-call", GRAPH_BREAK,
         "Call into a function Dynamo skips",
         "`time.*`, `random.random()`, `uuid`, `datetime.now()` and other library functions that "
         "Dynamo marks as skipped run in Python; the graph ends before the call.",
         "Compute the value outside and pass it in as an argument (or as a tensor).",
         "GB0007", "Attempted to call function marked as skipped"),
    Rule("FL122", "unsupported-numpy", GRAPH_BREAK,
         "NumPy call Dynamo cannot translate",
         "Dynamo traces most NumPy through torch._numpy, but not every function: ufunc methods "
         "(`np.add.at`) and the functions torch._numpy lacks (`np.interp`, `np.nanmean`, most of "
         "`np.random`, e.g. `np.random.beta`: GB0294) run in Python; `np.cov`/`np.corrcoef` check "
         "their input's values in Python inside the translation (GB0033); the index tricks "
         "`np.ogrid[...]`/`np.mgrid[...]` are skipped code (GB0008).",
         "Use the torch equivalent (e.g. `torch.distributions.Beta(a, b).sample()`).",
         "GB0290", "attempted to trace numpy.* function as a method"),
    Rule("FL123", "rnn-module", GRAPH_BREAK,
         "nn.RNN / nn.GRU / nn.LSTM in compiled code",
         "Dynamo does not trace the recurrent modules (allow_rnn=False): the graph breaks where the "
         "module is used and Dynamo skips the rest of that function, which runs eagerly. The cells "
         "(`nn.GRUCell`, ...) trace fine.",
         "Unroll the recurrence with `nn.GRUCell`/`nn.LSTMCell`, run the RNN outside the compiled "
         "function, or set `torch._dynamo.config.allow_rnn = True` (experimental).",
         "GB0014", "Attempted to wrap RNN, GRU, or LSTM"),
    Rule("FL124", "random-value-arithmetic", GRAPH_BREAK,
         "Python arithmetic on a random.randint/randrange/uniform value",
         "Dynamo makes the result of `random.randint`, `random.randrange` and `random.uniform` an "
         "input of the graph (a 0-d tensor drawn anew on each call). Multiplying a tensor by it "
         "traces, but Python arithmetic with other numbers (`n - w`, `w + 1`) does not; branching "
         "on it or slicing with it reads its value.",
         "Draw the value with torch (`torch.randint(lo, hi, ())`) and keep the arithmetic in "
         "tensors, or draw it outside the compiled function.",
         "GB0213", "unimplemented builtin op on tensor arguments"),
    Rule("FL125", "optimizer-call", GRAPH_BREAK,
         "Optimizer, LR scheduler or GradScaler method in compiled code",
         "Dynamo does not trace these objects' methods. `Optimizer.step()` calls "
         "`torch._dynamo.graph_break()` on purpose before and after the update (GB0025; and once an "
         "LR scheduler wraps it, its wrapper is skipped: GB0007); "
         "`zero_grad()` and the methods of LR schedulers and `GradScaler` (`scheduler.step()`, "
         "`scaler.scale(loss)`, ...) are marked as skipped (GB0008).",
         "Compile the forward and the loss, and call the optimizer, scheduler and scaler outside. To "
         "compile the update itself, compile a function that only calls `opt.step()`.",
         "GB0008", "Attempted to inline function marked as skipped"),
    Rule("FL126", "torch-host-query", GRAPH_BREAK,
         "torch query whose Python result Dynamo cannot trace",
         "Some torch functions return a plain Python value that Dynamo can neither put in the graph "
         "nor fold into a constant: `torch.initial_seed()`, `torch.get_num_threads()`, "
         "`torch.cuda.device_count()`, `torch.get_device(x)`, `torch.result_type(...)`, "
         "`torch.backends.cudnn.is_available()`, `x.storage()` (\"torch.* op returned non-Tensor\"; "
         "`torch.is_inference_mode_enabled()` is GB0046). Those it folds, such as "
         "`torch.cuda.is_available()`, `torch.is_grad_enabled()` or `torch.get_default_dtype()`, "
         "do not break.",
         "Query the value once outside the compiled function and pass it in, or read `x.device` / "
         "`x.dtype` instead.",
         "GB0208", "torch.* op returned non-Tensor"),
    Rule("FL127", "rng-generator", GRAPH_BREAK,
         "torch.Generator inside compiled code",
         "A `torch.Generator` cannot enter a graph: passing one as `generator=` to a random op "
         "(GB0055), creating one (GB0363) or calling its stateful methods such as `manual_seed` or "
         "`get_state` (GB7650) breaks the graph. `generator=None` is fine.",
         "Seed the global generator outside the compiled function (`torch.manual_seed`), or draw "
         "the random tensor outside and pass it in.",
         "GB0055", "Failed to convert args/kwargs to proxy"),
    Rule("FL128", "local-object-break", GRAPH_BREAK,
         "Graph break inside a method of an object made in the compiled function",
         "At a graph break inside an inlined method, Dynamo must rebuild the objects the frame "
         "holds to run the rest in Python. An object of a user class created inside the compiled "
         "function has no source to rebuild it from (\"Reconstruction failure\"), so Dynamo gives "
         "up at the call and runs the rest of the function eagerly (measured on 2.13; nn.Module "
         "instances are rebuilt fine).",
         "Fix the break inside the method, or create the object outside and pass it in.",
         "GB0092", "Reconstruction failure"),
    Rule("FL129", "module-hook-in-compiled", GRAPH_BREAK,
         "Module hook registered or removed inside compiled code",
         "`register_forward_hook` and the other module-hook registrations change the module in a "
         "way Dynamo cannot trace (GB0467), and removing the returned handle breaks again "
         "(GB0013). `Tensor.register_hook` traces.",
         "Register the hooks once, outside the compiled function (e.g. in `__init__`), and keep "
         "them; or use `torch.func`/explicit returns to get intermediate values.",
         "GB0467", "setattr() on unsupported type"),
    Rule("FL130", "disabled-call", GRAPH_BREAK,
         "Call to a function excluded from compilation",
         "A function decorated with `torch.compiler.disable` / `torch._dynamo.disable` always "
         "runs eagerly: the graph ends before the call and resumes after it.",
         "Remove the decorator if the function is traceable, or move the call outside.",
         "GB0098", "Skip calling `torch.compiler.disable()`d function"),
    Rule("FL131", "explicit-graph-break", GRAPH_BREAK,
         "Explicit graph break",
         "`torch._dynamo.graph_break()` ends the graph on purpose.",
         "Remove it if it was left from debugging.",
         "GB0025", "Call to `torch._dynamo.graph_break()`"),
    Rule("FL140", "requires-grad-mutation", GRAPH_BREAK,
         "requires_grad changed inside compiled code",
         "Calling `requires_grad_()` on an intermediate that leaves the graph cannot be traced.",
         "Set requires_grad on inputs before calling the compiled function.",
         "GB8985", "requires_grad_() intermediate leaked as output"),
    Rule("FL141", "parameter-in-forward", GRAPH_BREAK,
         "nn.Parameter created inside compiled code",
         "Creating parameters while tracing is unsupported; parameters belong in `__init__`.",
         "Create the parameter in `__init__` (or a buffer with `register_buffer`).",
         "GB0264", "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"),
    Rule("FL142", "autograd-in-compiled", GRAPH_BREAK,
         "Autograd call inside compiled code",
         "`torch.autograd.grad` (trace_autograd_ops=False) and `.backward()` on in-graph tensors "
         "run outside the graph. `torch.autograd.functional` (`jacobian`, `hessian`, `vjp`, `jvp`, "
         "`hvp`, `vhp`) takes the function to differentiate as an argument, which Dynamo cannot put "
         "in a graph (GB0055); the `torch.func` transforms (`grad`, `jacrev`, `jacfwd`, `hessian`, "
         "`vjp`, `jvp`, `vmap`) trace.",
         "Compile the forward only and call backward outside, or use compiled autograd; replace "
         "`torch.autograd.functional.jacobian(f, x)` by `torch.func.jacrev(f)(x)`.",
         "GB9186", "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`"),
    Rule("FL143", "sort-tensors", GRAPH_BREAK,
         "Python sort of tensors",
         "`sorted()`/`list.sort()` over tensors compares tensor values in Python.",
         "Stack and use `torch.sort`/`torch.argsort`.",
         "GB0207", "sort with non-constant keys"),
    Rule("FL144", "min-max-key-tensors", GRAPH_BREAK,
         "min()/max() with key= over tensors",
         "Dynamo's `min`/`max` take no `key=`: with tensors among the items or as the key's "
         "result, the call cannot be traced.",
         "Stack the candidates and use `torch.argmin`/`torch.argmax`.",
         "GB0193", "invalid call to builtin op handler"),
    Rule("FL145", "ndarray-dtype", GRAPH_BREAK,
         "`.dtype` of a NumPy array traced from tensors",
         "Dynamo traces NumPy arrays as tensors (torch._numpy), and reading an array's `.dtype` is "
         "not supported there (measured on 2.13: `np.finfo(h.dtype)`; `.shape`, `.size`, `.ndim` "
         "and `.itemsize` trace).",
         "Name the dtype you know (`np.float32`), or read it from the tensor before converting.",
         "GB0157", "Unsupported ndarray attribute access"),
    Rule("FL132", "method-resumed-after-break", GRAPH_BREAK,
         "Tensor method call resumes after a graph break in its arguments",
         "Python looks up `t.method` before it evaluates the arguments. When a function called in an "
         "argument graph-breaks (`t.copy_(helper(x))`), Dynamo resumes with the bound method already "
         "on the stack, and a bound method of a tensor it did not create there is code it cannot "
         "trace: the call is a second break.",
         "Call the function first and pass its result: `y = helper(x)` then `t.copy_(y)`.",
         "GB0007", "Attempted to call function marked as skipped"),
    # --- performance -----------------------------------------------------------------------
    Rule("FL150", "frame-skipped", PERF,
         "Graph break inside a loop, try or generator: Dynamo gives up on the rest of the function",
         "Dynamo cannot resume tracing in the middle of a `try` block, a generator expression "
         "(`any(... for ...)`, `sum(... for ...)`) or a dict comprehension, nor in a loop body unless "
         "a `return` follows the break before the loop jumps back to its head (a retry loop that "
         "returns from its body resumes). When a graph break happens there (directly or in a "
         "function called from there), it skips the frame: everything after runs eagerly, and later "
         "breaks in this function are not even reported. An `nn.RNN`/`nn.GRU`/`nn.LSTM` (FL123) "
         "makes it skip the frame wherever it is used.",
         "Fix the break inside the loop, or move the loop body into a function of its own.",
         None, None),
    # --- control flow that tracing would bake in -----------------------------------------
    Rule("FL201", "trace-bakes-branch", TRACE_UNSAFE,
         "Branch on a tensor's value is frozen by tracing",
         "`torch.jit.trace` records only the path the example input takes; `torch.export` "
         "rejects the data-dependent condition. Other inputs silently take the wrong branch.",
         "Use `torch.where` or `torch.cond`.",
         None, None),
    Rule("FL202", "trace-bakes-value", TRACE_UNSAFE,
         "Tensor value becomes a constant when traced",
         "`.item()`, `float()`, `.tolist()` during tracing record the example's value as a "
         "constant in the graph.",
         "Keep the computation in tensors.",
         None, None),
    Rule("FL203", "trace-bakes-shape", TRACE_UNSAFE,
         "A size is frozen by tracing",
         "While tracing, sizes are 0-d tensors: a branch on `x.shape`, `int()`/`float()` of a size, "
         "`min`/`max`/`math.*` over sizes, `len(x)`, iterating or unpacking a tensor turn one into a "
         "Python value (a TracerWarning), and the trace keeps the value the example input gave. So "
         "do modules that check their input's sizes in Python (`GroupNorm`, `InstanceNorm*`, "
         "`MultiheadAttention`, the `Transformer*` layers, `Embedding` with a `padding_idx` other than 0). "
         "Dynamo traces all of these symbolically.",
         "Keep size arithmetic in tensor ops (`x.size(0)` into `torch.arange`, `torch.div` instead of "
         "`math.*`), or use `torch.export` with `Dim` constraints.",
         None, None),
    Rule("FL204", "trace-drops-side-effect", TRACE_UNSAFE,
         "Python side effect runs only while tracing",
         "`print`, logging and Python state updates run once at trace time and never again.",
         "Move the side effect outside the traced function.",
         None, None),
    # --- recompiles ------------------------------------------------------------------------
    Rule("FL301", "shape-specialization", RECOMPILE,
         "Branch or loop on a shape: Dynamo guards on it",
         "Dynamo decides the branch at compile time and guards on the shape; an input whose shape "
         "takes the other branch triggers a recompile. A `for` loop or comprehension over "
         "`range()` of a size is unrolled, so its trip count is guarded the same way (even with "
         "`dynamic=True`), unless a graph break inside the loop leaves it to Python.",
         "Mark the dimension dynamic (`torch._dynamo.mark_dynamic`) or make both paths one "
         "tensor expression. A loop over a size compiles one graph per size unless it becomes "
         "tensor ops (e.g. `cumsum`/`cumprod` for a linear recurrence).",
         None, None),
    Rule("FL302", "mutated-state", RECOMPILE,
         "Compiled code mutates module or global state",
         "Dynamo replays the mutation but guards on the old value, so each call that sees a new "
         "value recompiles (up to the recompile limit, then falls back to eager). That is any "
         "`self.<name>` the compiled code reads before it stores to it (in `forward` or a method "
         "it calls) and that then gets a new Python value, or a first value after None; a tensor "
         "replacing a tensor keeps its guard. The same holds for a dict or list the compiled "
         "function is passed and changes: it guards on the contents where it first reads them.",
         "Keep counters in tensors (`self.steps += 1` on a buffer) or outside the compiled code.",
         "GB0039", "Dynamo recompile limit exceeded"),
]

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in _RULES}


def resolve_codes(selectors) -> set[str]:
    """Expands settings like ["FL1", "print", "FL302"] (prefixes, names or ids) to rule ids."""
    codes: set[str] = set()
    for selector in selectors:
        selector = selector.strip()
        if selector in RULES_BY_NAME:
            codes.add(RULES_BY_NAME[selector].code)
            continue
        matched = {code for code in RULES if code.startswith(selector.upper())}
        if not matched:
            raise ValueError(f"unknown rule selector {selector!r}")
        codes |= matched
    return codes
