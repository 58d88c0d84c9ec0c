"""Walks a function body the way Dynamo would trace it, and reports where tracing stops.

An abstract interpreter over the AST: statements in order, an environment of type-lite
values, calls into user functions followed with the argument types of the call site. A
walk's result (an Evaluation) records what it observed of the outside world; memo.py
memoises walks on that and decides when one must be redone.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

from . import comprehensions
from . import kinds as K
from .findings import Span
from .calls import (CLOCK_CALLS, CONTAINER_MUTATORS, NUMPY_GENERATOR_CLASSES, RANDOM_VALUE, RETURN_TYPE_FIELDS,
                    RNN_MODULES, builtin_call, evaluate_call, partial_of, registered_functions)
from .fixes import fix_for
from .index import COMPILE, EXPORT, EXTERNAL_PREFIXES, TRACE, ClassInfo, FunctionInfo
from .kinds import Ty
from .params import annotation_type, bind_parameters, root_parameters
from .rules import GRAPH_BREAK, RULES, TRACE_UNSAFE
from .source import _split_lines

MAX_DEPTH = 12
# Expressions that put an operation in Dynamo's graph when they give a tensor (with subscripts of one);
# arithmetic counts when its type is unknown too.
GRAPH_OPS = {ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare}
ARITHMETIC = {ast.BinOp, ast.UnaryOp}
CLOSURE = "<closure>"  # marks the closure entry appended to a nested function's parameters
COMPILING_CHECKS = {"torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling",
                    "torch._dynamo.is_compiling", "torch._utils.is_compiling"}

# The annotations that make `p[k] = v` a container store rather than a tensor write.
CONTAINER_ANNOTATIONS = {"dict", "list", "Dict", "List", "MutableMapping", "MutableSequence", "OrderedDict",
                         "defaultdict"}
# Calls that make a module-level name a list or dict.
GLOBAL_CONTAINERS = {"list", "dict", "collections.defaultdict", "collections.OrderedDict", "collections.deque"}

# Python values Dynamo guards on by value (a module attribute holding one is a constant of the graph).
ARRAY_ATTRS = {"shape": K.T_SHAPE, "ndim": K.T_RANK_INT, "size": K.T_SHAPE_INT, "dtype": K.T_DTYPE,
               "itemsize": K.T_INT, "nbytes": K.T_SHAPE_INT}
PYTHON_VALUES = {K.INT, K.NUM, K.BOOL, K.STR, K.DATA}

# What `isinstance(x, T)` makes x inside the branch.
NARROWED_TYPES = {"list": K.seq_of(K.T_UNKNOWN), "tuple": K.seq_of(K.T_UNKNOWN), "dict": Ty(K.DICT, ref=K.T_UNKNOWN),
                  "str": K.T_STR, "int": K.T_NUM, "float": K.T_NUM, "bool": K.T_BOOL, "torch.Tensor": K.T_TENSOR}

# Graph-break rule → what the same construct means under torch.jit.trace / torch.export.
TRACE_EQUIVALENT = {"FL101": "FL201", "FL102": "FL202", "FL103": "FL202", "FL104": "FL202",
                    "FL110": "FL204", "FL111": "FL204", "FL112": "FL204", "FL113": "FL204",
                    "FL301": "FL203"}


# What a call to a function that cannot be walked gives: (returns, breaks?, attributes it stores).
UNKNOWN_OUTCOME = (K.T_UNKNOWN, False, frozenset())


@dataclass
class Evaluation:
    """The memoised result of walking one function in one context."""

    returns: Ty
    findings: list[tuple]  # (code, span relative to the def line, message, fix relative)
    observations: list[tuple]  # (callee, params or None if it did not parse, call site, (returns, breaks))
    breaks: bool = False  # tracing this function (inlined) hits a graph break somewhere
    # (`__init__`, its block's text) of those whose attribute types the walk used (parsed for it:
    # their syntax errors count)
    reads: list[tuple] = field(default_factory=list)
    # Module attributes the walk read before storing to them, as (class key, name): Dynamo guards
    # on them. A store to one (class key, name, span, message) recompiles if the compile root's
    # pass guards on it anywhere (memo.py decides, over the pass).
    guarded_attributes: set = field(default_factory=set)
    attribute_stores: list[tuple] = field(default_factory=list)
    stored: frozenset = frozenset()  # (class key, name) it or a callee stores to: later reads are no guards


class FunctionWalker:
    """Walks one function body in one context."""

    constructing: frozenset = frozenset()  # `__init__`s being walked for an instance's attributes

    def __init__(self, analysis, function: FunctionInfo, mode: str, params: tuple, chain, depth):
        self.analysis = analysis
        self.function = function
        self.module = function.module
        self.mode = mode
        self.chain = chain
        self.depth = depth
        self.base = function.node.lineno  # block-relative line of the def
        self.env: dict[str, Ty] = {}
        self.local_imports: dict[str, str] = {}
        self.local_functions: dict[str, FunctionInfo] = {}
        self.globals_declared: set[str] = set()
        self.returns: Ty | None = None
        self.result = Evaluation(K.T_UNKNOWN, [], [])
        # Dynamo cannot resume inside a loop or try body of the frame, nor inside a generator
        # expression or dict comprehension: a break there makes it skip the rest of the frame
        # (measured on 2.13: later breaks in the frame are never reported; callees still compile
        # as frames of their own).
        # ... nor inside a generator function it inlines (`@contextmanager` bodies, `__iter__`):
        # measured on 2.13, only the first break in one is reported.
        self.unresumable_depth = int(_is_generator(function))
        self.loops: list[int] = []  # len(self.position) at each enclosing loop body of the frame
        self.own_frames: set[str] = set()  # library functions compiled as frames of their own (report_own_frame)
        self.dead = False
        self.dead_after_this = False
        self.resume_pending = False
        # comprehensions since the frame last resumed that Python reruns if Dynamo skips the frame
        self.python_reruns: list[ast.expr] = []
        self.unpacked_generators: set[ast.GeneratorExp] = set()  # see unpacks_generator
        self.segment_ops = 0  # tensor operations traced since the frame last resumed
        self.finished = False  # a folded branch returned: nothing after it is traced
        self.break_count = 0  # graph breaks so far in this frame
        self.clocks: dict[str, int] = {}  # locals holding a clock reading → break_count after it
        self.clock_reads: list[K.WallClock] = []  # reads of them since the frame last resumed
        self.callee_breaks = 0  # of which at calls of user functions that break (FL132)
        self.quiet = 0  # > 0 inside code Dynamo traces only on unusual paths (except handlers)
        self._seen: set = set()
        self.current_statement: ast.stmt | None = None
        self._lines: list[str] | None = None
        self.position: list[tuple[list, int]] = []  # (statement list, index) from the body inwards
        self.item_next_to_tensor: set[int] = set()  # `.item()` calls whose other operand is a tensor
        self.torch_contexts = 0  # depth of `with torch.<context manager>` blocks around the position
        self.local_objects: set[str] = set()  # names bound to user-class objects made in this frame
        self.changed_state: set[str] = set()  # lists/dicts outliving the call that this walk changed
        self.stored_attributes: set[tuple] = set()  # (class key, name) this walk stored to
        node = function.node
        if params and not isinstance(params[-1], Ty):  # (CLOSURE, (name, type)...) of a nested function
            self.env.update(dict(params[-1][1:]))
            params = params[:-1]
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for arg, ty in zip(args, params):
            self.env[arg.arg] = self.global_default(ty.ref) if isinstance(ty.ref, K.GlobalDefault) else ty
        if node.args.vararg:  # bound by bind_parameters after the named ones; a root's: tensors
            self.env[node.args.vararg.arg] = params[len(args)] if len(params) > len(args) else K.T_TENSOR_SEQ
        if node.args.kwarg:
            self.env[node.args.kwarg.arg] = K.T_OBJ

    def run(self) -> Evaluation:
        try:
            self.block(self.function.node.body)
        except RecursionError:
            pass  # pathological nesting: keep what was found so far
        self.result.returns = self.returns or K.T_NONE
        self.result.stored = frozenset(self.stored_attributes)
        return self.result

    # --- reporting -----------------------------------------------------------------------------
    def report(self, code: str, node: ast.AST, message: str | None = None, span_node=None, fix=None) -> None:
        if self.dead or self.quiet:
            return
        if not self._record(code, node, message, span_node, fix):
            return
        if self.dead_after_this:
            self.die(node)
        elif RULES[code].category == GRAPH_BREAK and self.mode == COMPILE:
            self.resume_pending = True

    def report_own_frame(self, code: str, node: ast.AST, message: str, function: str) -> None:
        """A break inside library Python code that Dynamo compiles as a frame of its own when this
        frame runs it eagerly (after the frame was given up): reported at the first call of
        `function` all the same (measured on 2.13: scipy.ndimage functions called in a skipped
        loop; later calls reuse the compiled frame and report nothing)."""
        if not self.dead:
            self.report(code, node, message)
        elif self.mode == COMPILE and not self.quiet and function not in self.own_frames:
            self.own_frames.add(function)
            self._record(code, node, message, None, None)

    def _record(self, code: str, node: ast.AST, message: str | None, span_node, fix) -> bool:
        """Adds the finding (once per line and rule); False when there is nothing new to add."""
        if self.mode != COMPILE and RULES[code].category != TRACE_UNSAFE:
            code = TRACE_EQUIVALENT.get(code)
            if code is None:
                return False
        rule = RULES[code]
        if rule.category == GRAPH_BREAK:
            self.frame_breaks()
        span = self.relative_span(span_node or node)
        key = (span.line, code)
        if key in self._seen:
            return False
        self._seen.add(key)
        if message is None:
            message = rule.summary
        if self.mode == EXPORT and code == "FL201":
            message += " (torch.export fails on it)"
        self.result.findings.append((code, span, message, fix if self.mode == COMPILE else None))
        return True

    def report_size_read(self, node: ast.AST, message: str) -> None:
        """Under torch.jit.trace sizes are 0-d tensors: turning one into a Python number or bool,
        or iterating a tensor, warns and bakes the value into the trace (FL203, measured on 2.13).
        Dynamo traces the same code (sizes are symbolic), so nothing is reported for compile roots."""
        if self.mode != COMPILE:
            self.report("FL203", node, message)

    def host_number(self, ty: Ty) -> Ty:
        """A size turned into a Python number (int(), math.floor) or counted out by range():
        the trace sees a plain number from then on (the conversion warned once, measured on
        2.13); Dynamo keeps it symbolic, guarded."""
        return ty if self.mode == COMPILE or not ty.shape_derived else ty.but(shape_derived=False)

    def iterate_user_object(self, node: ast.expr, iterable: Ty) -> None:
        """`for layer in self.layers` over a class with its own `__iter__` (a LayerDrop list):
        Dynamo inlines the iterator."""
        if iterable.kind in (K.MODULE, K.OBJ) and isinstance(iterable.ref, ClassInfo):
            method = iterable.ref.lookup_method("__iter__")
            if method is not None:
                self.call_user(node, method, [], {}, receiver=iterable)

    def report_tensor_iteration(self, node: ast.expr, iterable: Ty) -> None:
        if iterable.kind == K.TENSOR:
            self.report_size_read(node, "Iterating a tensor: the trace fixes the number of iterations")

    def die(self, node: ast.AST, cause: str = "Graph break inside a loop, try or generator") -> None:
        self.dead = True
        self.rerun_in_python()  # Dynamo runs the frame from where it last resumed
        span = self.relative_span(node)
        self.result.findings.append(("FL150", span, f"{cause}: Dynamo skips the rest "
                                                    f"of `{self.function.qualname}` (it runs eagerly)", None))

    def rerun_in_python(self) -> None:
        """Python runs the comprehensions since the frame last resumed: each is a frame of its own
        that Dynamo cannot iterate (comprehensions.py)."""
        for comprehension in self.python_reruns:
            self._record("FL135", comprehension, None, None, None)
        self.python_reruns.clear()

    def call_unresumable(self, node: ast.AST, callee: FunctionInfo, args: list, receiver: Ty, cause: str) -> Ty:
        """Walks a call Dynamo inlines at a point it cannot resume from (a property's getter at an
        attribute load, a context manager's `__enter__`/`__exit__`, measured on 2.13): a break in
        it makes Dynamo run the rest of the frame eagerly."""
        breaks = self.break_count
        value = self.call_user(node, callee, args, {}, receiver=receiver)
        if self.break_count > breaks and not self.dead and self.mode == COMPILE:
            self.resume_pending = False
            self.die(node, cause)
        return value

    def skip_frame(self, node: ast.AST, cause: str) -> None:
        """After a break Dynamo cannot resume from (measured on 2.13: at an RNN module, an
        unsupported context manager, arithmetic on a random.* value), it runs the rest of the
        frame eagerly; its callers resume after the call."""
        if self.mode == COMPILE and not self.dead and not self.quiet:
            self.die(node, cause)

    def frame_breaks(self) -> None:
        """A graph break at the current position of this frame (here or in an inlined callee)."""
        self.result.breaks = True
        self.break_count += 1
        for clock in list(self.clock_reads):
            self.specialize_clock(clock)
        self.clock_reads.clear()
        if not self.resumable_here():
            self.dead_after_this = True

    def resumable_here(self) -> bool:
        """Whether Dynamo can resume after a break at the current position: not inside a try body,
        a generator, a generator expression or dict comprehension; inside loops only when the code
        that follows the break reaches a `return` before a jump back to the innermost loop's head
        (measured on 2.13: it scans the bytecode after the break for a backward jump and stops at
        the first return; `if ...: return` after a `.item()` in a retry loop resumes)."""
        if not self.unresumable_depth:
            return True
        return self.unresumable_depth == len(self.loops) and \
            _returns_before_looping(self.position[self.loops[-1]:])

    def mutated_arguments(self) -> list[tuple]:
        """FL302 findings for a compile root that changes a dict or list it was passed: Dynamo
        guards on the container's contents where the code first reads it, and the change makes
        that guard fail on the next call with the same container (measured on 2.13: `d[k] = v`,
        `if k not in d: d[k] = ...`, `d[k] = d.get(k, 0) + 1`, `l.append(v)`). Not part of a
        memoised walk: whether the function is the root is not in the memo key."""
        node = self.function.node
        annotations = {arg.arg: arg.annotation for arg in [*node.args.posonlyargs, *node.args.args,
                                                           *node.args.kwonlyargs]}
        # (`scaler: torch.amp.GradScaler` has an `update()` too)
        params = {name for name, annotation in annotations.items() if annotation is None or annotation_type(
            self.module, annotation).kind in (K.SEQ, K.DICT, K.UNKNOWN)} - {"self", "cls"}
        first_use: dict[str, ast.Name] = {}
        rebound, mutated = set(), set()
        for child in (child for statement in node.body for child in ast.walk(statement)):
            if isinstance(child, ast.Name) and child.id in params:
                if not isinstance(child.ctx, ast.Load):
                    rebound.add(child.id)
                elif child.id not in first_use or _before(child, first_use[child.id]):
                    first_use[child.id] = child
            elif isinstance(child, ast.Subscript) and not isinstance(child.ctx, ast.Load) \
                    and isinstance(child.value, ast.Name) and child.value.id in params:
                key = child.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str) \
                        or self._container_annotation(annotations[child.value.id]):
                    mutated.add(child.value.id)
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.func.attr in CONTAINER_MUTATORS and isinstance(child.func.value, ast.Name) \
                    and child.func.value.id in params:
                mutated.add(child.func.value.id)
        return [("FL302", self.relative_span(first_use[name]),
                 f"`{name}` is a dict or list argument the compiled code changes: Dynamo guards on its "
                 f"contents and recompiles on the next call with it", None) for name in sorted(mutated - rebound)]

    def report_state_change(self, container: ast.expr, node: ast.AST) -> None:
        """FL302 where code first changes a list or dict that outlives the call (`self.history`,
        a module-level dict): Dynamo guards on its contents, which the change makes fail on the
        next call (measured on 2.13: append, `d[k] = v`, on module attributes and globals)."""
        if self.resume_pending and isinstance(self.current_statement, ast.AugAssign) and not self.resume_is_traced():
            # `self.totals[k] += float(v)`: the dict was read before the break; the store is left to
            # the resumed frame, which Python runs when it holds no tensor: nothing guards on it (an
            # `.append(float(v))` resumes with the list on the stack and recompiles: 2.13)
            return
        if isinstance(container, ast.Attribute) and isinstance(container.value, ast.Name) \
                and container.value.id == "self":
            owner = self.expr(container.value)
            if owner.kind not in (K.MODULE, K.OBJ) or not isinstance(owner.ref, ClassInfo) \
                    or not _is_container(self.module_attribute(owner, container.attr)):
                return
            where = f"`self.{container.attr}`"
        elif isinstance(container, ast.Subscript):  # `STATS[name].append(v)`, `self.history[k].append(v)`:
            return self.report_state_change(container.value, node)  # a list it holds
        elif isinstance(container, ast.Name) and container.id not in self.env \
                and container.id not in self.local_imports:
            value = self.module.globals.get(container.id)
            if not (isinstance(value, (ast.List, ast.Dict)) or isinstance(value, ast.Call)
                    and self.dotted(value.func) in GLOBAL_CONTAINERS):
                return
            where = f"Global `{container.id}`"
        else:
            return
        if where not in self.changed_state:  # the guard that fails is the first change's
            self.changed_state.add(where)
            self.report("FL302", node, f"{where} changes on every call; Dynamo guards on its contents and recompiles")

    def store_attribute(self, cls: ClassInfo, name: str, value: Ty, statement: ast.stmt) -> None:
        """`self.<name> = value`: a candidate FL302 when the value is one Dynamo's guard on the
        attribute (if the compiled code read it) no longer matches on the next call (measured on
        2.13: a new Python value, or the first value of an attribute that was None; a tensor
        replacing a tensor keeps its guard). The store recompiles whether or not it is traced."""
        key = _class_key(cls), name
        self.stored_attributes.add(key)
        if self.mode != COMPILE or self.quiet:
            return
        initial = self.module_attribute(Ty(K.MODULE, ref=cls), name)
        first_value = initial.kind == K.NONE and value.kind != K.NONE
        if not (first_value or value.kind in PYTHON_VALUES or initial.kind in PYTHON_VALUES and value.kind == K.TENSOR):
            return
        if first_value:
            message = f"`self.{name}` is set on the first call: Dynamo guarded on it being None and recompiles"
        elif isinstance(statement, ast.AugAssign) or isinstance(statement, ast.Assign) and _reads_self_attribute(
                statement.value, name):  # `self.calls += 1`, `self.calls = self.calls + 1`
            message = f"`self.{name}` is a Python value updated on every call; Dynamo guards on it and recompiles"
        else:
            message = f"`self.{name}` changes after the compiled code read it: Dynamo guards on its value and " \
                      f"recompiles"
        self.result.attribute_stores.append((key, self.relative_span(statement), message))

    def _container_annotation(self, annotation: ast.expr | None) -> bool:
        if isinstance(annotation, ast.Subscript):
            annotation = annotation.value
        name = self.module.dotted(annotation) if annotation is not None else None
        return name is not None and name.rsplit(".", 1)[-1] in CONTAINER_ANNOTATIONS

    def guard_attribute(self, cls: ClassInfo, name: str) -> None:
        """A read Dynamo guards on, unless this walk stored the attribute first."""
        if not self.dead and not self.quiet:
            key = _class_key(cls), name
            if key not in self.stored_attributes:
                self.result.guarded_attributes.add(key)

    def held_across_calls(self, node: ast.expr) -> bool:
        """An object that outlives one call, so Dynamo guards on its attributes: `self` or an object
        it holds (`self.trainer`), or one the compile root was passed (`schedule.step_index`)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            return False
        if node.id == "self":
            return True
        return self.depth == 0 and node.id in _argument_names(self.function.node)

    def relative_span(self, node: ast.AST) -> Span:
        line = node.lineno
        column = node.col_offset
        end_line = node.end_lineno or line
        end_column = node.end_col_offset if node.end_col_offset is not None else column
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            # Python 3.11 attributes a multi-line method call to the line of its attribute.
            func = node.func
            line = func.end_lineno or line
            column = max((func.end_col_offset or 0) - len(func.attr), 0)
        line_text = self._line_text(line)
        end_text = self._line_text(end_line) if end_line != line else line_text
        column, end_column = _char_column(line_text, column), _char_column(end_text, end_column)
        return Span(line - self.base, column, end_line - self.base, end_column)

    @property
    def lines(self) -> list[str]:
        """The block's lines, split where Python splits them (not at \\f or U+2028)."""
        if self._lines is None:
            self._lines = [line.rstrip("\r\n") for line in _split_lines(self.function.block.text)]
        return self._lines

    def _line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    # --- statements ----------------------------------------------------------------------------
    def block(self, statements: list[ast.stmt]) -> None:
        for index, statement in enumerate(statements):
            if self.finished:
                return
            self.position.append((statements, index))
            try:
                self.statement(statement)
                if self.resume_pending:  # decided once the statement that broke has finished
                    self.settle_resume()
            finally:
                self.position.pop()

    def settle_resume(self, ahead: list[ast.stmt] = (), stack: Ty | None = None) -> None:
        """Dynamo resumes after the break in a new frame: its live values are the names the rest
        of the function reads (`ahead`, then what follows the current statements) and `stack`,
        a value the resumed statement still holds (a loop's iterable)."""
        self.resume_pending = False
        self.python_reruns.clear()
        self.segment_ops = 0
        if not self.dead and not self.resume_is_traced(ahead, stack):
            self.dead = True  # the resumed frame holds no tensor: left to Python

    def closure_for(self, callee: FunctionInfo) -> tuple:
        """Types of the enclosing variables a nested function reads (part of its memo key)."""
        used = {node.id for node in ast.walk(callee.node) if isinstance(node, ast.Name)}
        return (CLOSURE,) + tuple(sorted((name, ty) for name, ty in self.env.items() if name in used))

    def resume_is_traced(self, ahead: list[ast.stmt] = (), stack: Ty | None = None) -> bool:
        """After a break, Dynamo compiles the rest of the frame only if that rest holds a
        tensor: a live local that is one, or a torch/numpy module it uses (as
        `has_tensor_in_frame` checks). Otherwise the rest runs eagerly and breaks nothing."""
        if self.torch_contexts or stack is not None and _may_hold_tensor(stack):
            return True
        names = set()
        rest = [*ahead, *(statement for statements, index in self.position for statement in statements[index + 1:])]
        for statement in rest:
            names.update(node.id for node in ast.walk(statement) if isinstance(node, ast.Name))
        for name in names:
            ty = self.env.get(name)
            if ty is not None:
                if _may_hold_tensor(ty):
                    return True
            elif name not in self.local_functions:
                target = self.local_imports.get(name) or self.module.imports.get(name)
                if target and target.split(".")[0] in ("torch", "numpy"):
                    return True
                if name in self.module.globals and self.global_type(name).kind in (K.TENSOR, K.MODULE, K.UNKNOWN):
                    return True
        return False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._statements, cls._expressions = _handlers(cls, "stmt_"), _handlers(cls, "expr_")

    def statement(self, node: ast.stmt) -> None:
        self.current_statement = node
        method = self._statements.get(type(node))
        if method is not None:
            method(self, node)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
                elif isinstance(child, ast.stmt):
                    self.statement(child)

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.expr(node.value)

    def stmt_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.targets[0], (ast.Tuple, ast.List)):
            self.unpacks_generator(node.value)
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        value = self.expr(node.value)
        if value.kind == K.UNKNOWN or value.kind in (K.SEQ, K.DICT) and value.ref in (None, K.T_UNKNOWN):
            # `self.cache: Dict[str, Tensor] = {}`: the annotation says what the empty container holds
            annotated = annotation_type(self.module, node.annotation)
            if value.kind == K.UNKNOWN or annotated.kind == value.kind:
                value = annotated
        self.assign(node.target, value, node)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        current = self.expr(node.target)
        value = self.binary(current, self.expr(node.value), node)
        self.assign(node.target, value, node)

    def assign(self, target: ast.expr, value: Ty, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
            self.clocks.pop(target.id, None)
            source = getattr(statement, "value", None)
            if self.mode == COMPILE and not self.dead and (isinstance(value.ref, K.WallClock) or isinstance(
                    source, ast.Call) and not source.args and self.dotted(source.func) in CLOCK_CALLS):
                self.clocks[target.id] = self.break_count  # the clock call's own break is counted already
            made_here = isinstance(source, (ast.Call, ast.Name)) and self.made_here(source, value)
            (self.local_objects.add if made_here else self.local_objects.discard)(target.id)
            if target.id in self.globals_declared and value.kind in (K.INT, K.NUM, K.BOOL, K.DATA, K.UNKNOWN):
                self.report("FL302", statement, f"Global `{target.id}` changes on every call; Dynamo "
                                                f"guards on its value and recompiles")
        elif isinstance(target, (ast.Tuple, ast.List)):
            if value.kind == K.TENSOR:
                self.report_size_read(target, "Unpacking a tensor iterates it: the trace fixes the item count")
            # `src, dst = edge_index`: a few rows of a bigger tensor, not 0-d indices
            element = value.but(zero_dim=False) if value.kind == K.TENSOR else self.element_type(value)
            if value.items is not None and len(value.items) == len(target.elts) \
                    and not any(isinstance(item, ast.Starred) for item in target.elts):
                for item, item_type in zip(target.elts, value.items):
                    self.assign(item, item_type, statement)
                return
            for item in target.elts:
                inner = item.value if isinstance(item, ast.Starred) else item
                self.assign(inner, K.seq_of(element) if isinstance(item, ast.Starred) else element, statement)
        elif isinstance(target, ast.Attribute):
            owner = self.expr(target.value)
            if owner.kind == K.CLASS and isinstance(owner.ref, ClassInfo) and (
                    value.kind in PYTHON_VALUES or value.kind == K.UNKNOWN):
                self.report("FL302", statement, f"Class attribute `{owner.ref.name}.{target.attr}` changes on "
                                                "every call; Dynamo guards on its value and recompiles")
            if owner.is_tensor and target.attr == "requires_grad":
                self.report("FL140", statement, "Setting `requires_grad` inside compiled code")
            if owner.kind == K.LOGGER:
                self.report("FL111", statement, "Setting an attribute of a logging.Logger is not traceable")
            if owner.kind in (K.MODULE, K.OBJ) and isinstance(owner.ref, ClassInfo) \
                    and self.held_across_calls(target.value):
                # `self.calls += 1`, `self.trainer.global_step += 1` (a state object the module holds)
                self.store_attribute(owner.ref, target.attr, value, statement)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            if container == K.T_PARAM_GROUP:
                # measured on 2.13: Dynamo guards on each group's keys and adds one of its own
                # ("capturable") while tracing, so the next call recompiles
                self.report("FL302", statement, "Changing an optimizer's param group inside compiled code "
                                                "recompiles on the next call")
            self.expr(target.slice)
            self.report_state_change(target.value, statement)
            if container.kind == K.DICT and isinstance(target.value, ast.Name):  # `d[k] = v`: d's values
                values = value if container.ref is None else K.join(container.ref, value)
                self.env[target.value.id] = Ty(K.DICT, ref=values)

    def stmt_Return(self, node: ast.Return) -> None:
        value = self.expr(node.value) if node.value is not None else K.T_NONE
        if self.break_count and not self.segment_ops and not self.dead:
            # Dynamo skips a resumed part of the frame that traced no tensor operation ("No ops
            # traced", measured on 2.13): Python runs it, comprehensions included
            self.rerun_in_python()
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool):
            value = value.but(ref=node.value.value)  # `def should_stop(...): return False` folds a caller's `if`
        self.returns = value if self.returns is None else K.join(self.returns, value)

    def stmt_If(self, node: ast.If) -> None:
        known = self.static_truth(node.test)
        if known is None:
            ty = self.test(node.test, node)
            if ty.kind == K.BOOL and isinstance(ty.ref, bool) and not isinstance(node.test, ast.BoolOp):
                known = ty.ref != (isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not))
        if known is not None:  # folded while tracing: only one branch is ever traced
            branch = node.body if known else node.orelse
            self.block(branch)
            if branch and isinstance(branch[-1], (ast.Return, ast.Raise)) and not self.loops:
                self.finished = True  # `if mode == "max": return ...`: the rest is never traced
            return
        before = dict(self.env)
        narrowed = self.isinstance_narrowing(node.test)
        if narrowed is not None:  # `elif isinstance(speakers, (list, tuple)):` — not a tensor in there
            self.env[narrowed[0]] = narrowed[1]
        self.narrow_not_none(node.test, holds=True)
        self.block(node.body)
        # a folded `if trimap is None: raise ...` in here ends this branch, not the function
        body_finished, self.finished = self.finished, False
        after_body = self.env
        self.env = dict(before)
        self.narrow_not_none(node.test, holds=False)  # `if mask is None: mask = ...` else: a mask
        self.block(node.orelse)
        self.finished = body_finished and self.finished
        self.env = _merge(after_body, self.env)

    def isinstance_narrowing(self, test: ast.expr) -> tuple[str, Ty] | None:
        """(name, type) that `isinstance(name, T)` guarantees inside its branch, for T a builtin
        container or scalar type or torch.Tensor."""
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
                and len(test.args) == 2 and isinstance(test.args[0], ast.Name)):
            return None
        classes = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        types = [NARROWED_TYPES.get(self.dotted(c) or "") for c in classes]
        if not types or None in types:
            return None
        return test.args[0].id, functools.reduce(K.join, types)

    def narrow_not_none(self, test: ast.expr, holds: bool) -> None:
        """In the branch where `test` is `holds`, an optional local that `name is not None` (or
        `name is None`) decides holds a value."""
        if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1 \
                and isinstance(test.ops[0], (ast.Is, ast.IsNot)) and isinstance(test.comparators[0], ast.Constant) \
                and test.comparators[0].value is None and isinstance(test.ops[0], ast.IsNot) == holds:
            ty = self.env.get(test.left.id)
            if ty is not None and ty.optional:
                self.env[test.left.id] = ty.but(optional=False)

    def stmt_While(self, node: ast.While) -> None:
        self.test(node.test, node)  # the loop header resumes fine: not "inside" the loop
        self.unresumable(node.body, loop=True)
        self.test(node.test, node)  # the loop-carried types may now make the test a tensor
        self.block(node.orelse)

    def stmt_For(self, node: ast.For) -> None:
        iterable = self.expr(node.iter)
        self.report_tensor_iteration(node.iter, iterable)
        self.iterate_user_object(node.iter, iterable)
        if self.resume_pending and not self.loops:  # the header broke: the loop runs in the resumed frame
            self.settle_resume([*node.body, *node.orelse], iterable)
        self.assign(node.target, self.element_type(iterable), node)
        self.unresumable(node.body, loop=True)
        self.unresumable(node.body, loop=True)  # second pass: loop-carried types (e.g. a tensor accumulator)
        self.report_unrolled(node.iter, iterable)  # unless a break in the body made Dynamo skip the frame
        self.block(node.orelse)

    def report_unrolled(self, node: ast.expr, iterable: Ty) -> None:
        """A loop or comprehension over a range of a size: Dynamo unrolls it and guards the trip
        count, so another size recompiles (measured on 2.13, dynamic=True), unless a graph break
        inside made it run the loop in Python. The tracer unrolls it too, but silently: no trace
        finding."""
        if self.mode == COMPILE and K.sized_by_shape(iterable):
            self.report("FL301", node, "Loop over a tensor's size: Dynamo unrolls it and recompiles for "
                                       "another size")

    def unresumable(self, body: list[ast.stmt], loop: bool = False) -> None:
        self.unresumable_depth += 1
        if loop:
            self.loops.append(len(self.position))
        try:
            self.block(body)
        finally:
            self.unresumable_depth -= 1
            if loop:
                self.loops.pop()

    stmt_AsyncFor = stmt_For

    def stmt_With(self, node: ast.With) -> None:
        user_contexts = []  # objects of workspace classes with an `__enter__`: Dynamo inlines it
        for item in node.items:
            context = self.expr(item.context_expr)
            if context.kind == K.OBJ and isinstance(context.ref, str) and context.ref.startswith("threading."):
                self.report("FL115", item.context_expr, f"`with` on a {context.ref} inside compiled code")
                self.skip_frame(item.context_expr, "Unsupported context manager")
            entered = self.context_method(item.context_expr, context, "__enter__", [])
            if entered is not None:
                user_contexts.append((item.context_expr, context))
            if item.optional_vars is not None:
                value = entered if entered is not None and entered.kind != K.UNKNOWN else \
                    K.T_OBJ if context.kind != K.TENSOR else context
                self.assign(item.optional_vars, value, node)
        # A frame resumed inside `with torch.no_grad():` (autocast, ...) re-enters it through a
        # torch global, so Dynamo traces the rest even with no tensor live (measured on 2.13).
        torch_context = any(isinstance(item.context_expr, ast.Call) and
                            (self.dotted(item.context_expr.func) or "").startswith("torch.") for item in node.items)
        self.torch_contexts += torch_context
        try:
            if user_contexts:  # Dynamo cannot resume inside a user context manager (measured on 2.13)
                self.unresumable(node.body)
            else:
                self.block(node.body)
        finally:
            self.torch_contexts -= torch_context
        for expr, context in reversed(user_contexts):
            self.context_method(expr, context, "__exit__", [K.T_NONE] * 3)

    def context_method(self, node: ast.expr, context: Ty, name: str, args: list) -> Ty | None:
        """Walks `__enter__`/`__exit__` of a workspace class's object; None when it has none."""
        if context.kind not in (K.OBJ, K.MODULE) or not isinstance(context.ref, ClassInfo):
            return None
        method = context.ref.lookup_method(name)
        if method is None:
            return None
        return self.call_unresumable(node, method, args, context, f"Graph break in `{method.qualname}`")

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node: ast.Try) -> None:
        self.unresumable(node.body)
        # Handlers are traced only when the body raises at compile time: types, but no findings;
        # unless the body raises itself (Dynamo traces `raise` and the handler, measured on 2.13).
        raises = any(isinstance(child, ast.Raise) for statement in node.body for child in ast.walk(statement))
        self.quiet += not raises
        try:
            for handler in node.handlers:
                if handler.name:
                    self.env[handler.name] = K.T_OBJ
                self.block(handler.body)
        finally:
            self.quiet -= not raises
        self.block(node.orelse)
        self.block(node.finalbody)

    stmt_TryStar = stmt_Try

    def stmt_Assert(self, node: ast.Assert) -> None:
        # Dynamo turns `assert <tensor>` into a runtime assert (no break, measured on 2.13) —
        # but only with no message or a constant one; a computed message makes it a branch.
        if node.msg is None or isinstance(node.msg, ast.Constant):
            test = self.expr(node.test)
            if test.shape_derived and test.ref != K.RANK:  # a rank is a plain int to the tracer
                self.report_size_read(node, "assert on a size: the trace checks the example input's size only")
        else:
            self.test(node.test, node)

    def stmt_Raise(self, node: ast.Raise) -> None:
        return  # the exception path is not traced unless taken

    def stmt_Global(self, node: ast.Global) -> None:
        self.globals_declared.update(node.names)

    def stmt_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.local_imports[alias.asname] = alias.name
            else:
                self.local_imports[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def stmt_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if node.module and node.level == 0:
                self.local_imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def stmt_FunctionDef(self, node: ast.FunctionDef) -> None:
        info = FunctionInfo(f"{self.function.qualname}.{node.name}", self.function.block, self.module,
                            self.function.cls, _node=node)
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.dotted(target) in ("torch.compiler.disable", "torch._dynamo.disable"):
                info.disabled = True
        self.local_functions[node.name] = info
        self.env[node.name] = Ty(K.FUNC, ref=info)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node: ast.ClassDef) -> None:
        self.env[node.name] = K.T_OBJ

    # --- tests (truthiness) ----------------------------------------------------------------------
    def static_truth(self, node: ast.expr) -> bool | None:
        """Conditions that are constants while Dynamo (or the tracer) runs the code."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.static_truth(node.operand)
            return None if inner is None else not inner
        if isinstance(node, ast.BoolOp):  # `if warning and align_corners:` with warning=False
            decisive = isinstance(node.op, ast.Or)  # the value that settles it: True for `or`
            unsettled = False
            for value in node.values:  # in evaluation order: a run-time operand before it is traced
                truth = self.static_truth(value)
                if truth is None:
                    if not self._python_flag(value):
                        return None
                    unsettled = True  # `self.aux_loss and self.training`: a flag, then eval mode
                    continue
                if truth == decisive:
                    return decisive
            return None if unsettled else not decisive
        if isinstance(node, (ast.Name, ast.Attribute)):
            ty = self.settled_value(node)  # `if verbose:` / `if self.verbose:` left at False
            if ty is not None and ty.kind == K.BOOL and isinstance(ty.ref, bool):
                return ty.ref
            if ty is not None and ty.kind == K.NONE:
                return False
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant):
            ty = self.settled_value(node.left)
            op, constant = node.ops[0], node.comparators[0].value
            if ty is not None and isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(ty.ref, K.Literal):
                return (ty.ref.value == constant) == isinstance(op, ast.Eq)  # `mode == "max"`, mode at its default
            if ty is not None and isinstance(op, (ast.Is, ast.IsNot)) and constant is None and ty.kind == K.NONE:
                return isinstance(op, ast.Is)  # `self.early_exit is not None`, left at None
        if isinstance(node, ast.Name):
            value = self.module_constant(node.id)
            if value is not None:
                return bool(value.value)  # Dynamo guards on the global and specializes the branch
        if isinstance(node, ast.Call) and len(node.args) == 2 and self.dotted(node.func) == "isinstance":
            return self.module_class_test(node.args[0], node.args[1])
        if isinstance(node, ast.Call) and not node.args:
            name = self.dotted(node.func)
            if name in COMPILING_CHECKS:
                return self.mode == COMPILE
            if name == "torch.jit.is_tracing" or name == "torch._C._get_tracing_state":
                return self.mode == TRACE
            if name == "torch.jit.is_scripting":
                return False
        return None

    def _python_flag(self, node: ast.expr) -> bool:
        """A name or attribute holding a Python bool (evaluating it decides nothing by itself)."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        self.quiet += 1
        try:
            return self.expr(node).kind == K.BOOL
        finally:
            self.quiet -= 1

    def module_constant(self, name: str) -> ast.Constant | None:
        """The constant a module-level name is bound to, when no `global` statement rebinds it and
        no local import shadows it."""
        value = self.module.globals.get(name) if name not in self.local_imports else None
        return value if isinstance(value, ast.Constant) and name not in self.module.mutated_globals else None

    def module_class_test(self, value: ast.expr, classes: ast.expr) -> bool | None:
        """`isinstance(self.rnn, nn.LSTM)` on a submodule whose class (or each of whose possible
        classes) is a torch.nn leaf class: Dynamo specializes on the module, so it is a constant."""
        tested = {self.dotted(c) for c in (classes.elts if isinstance(classes, ast.Tuple) else [classes])}
        if not tested <= LEAF_MODULE_CLASSES or not isinstance(value, (ast.Name, ast.Attribute)):
            return None
        self.quiet += 1
        try:
            module = self.expr(value)
        finally:
            self.quiet -= 1
        possible = module.ref if isinstance(module.ref, tuple) else (module.ref,)
        if module.kind != K.MODULE or module.optional or not set(possible) <= LEAF_MODULE_CLASSES:
            return None
        outcomes = {cls in tested for cls in possible}
        return outcomes.pop() if len(outcomes) == 1 else None

    def settled_value(self, node: ast.expr) -> Ty | None:
        """The type of a local, or of an attribute path (`self.cfg.verbose`) on an instance whose
        construction the walk saw (a root's site, a call): either may be a constant (a default
        the call left alone). Not the attributes any instance of the class may hold."""
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if not isinstance(node, ast.Attribute):
            return None
        first = node
        while isinstance(first.value, ast.Attribute):
            first = first.value
        owner = self.env.get(first.value.id) if isinstance(first.value, ast.Name) else None
        if owner is None or not owner.attrs or first.attr not in dict(owner.attrs):
            return None
        self.quiet += 1
        try:
            return self.expr(node)
        finally:
            self.quiet -= 1

    def test(self, node: ast.expr, statement: ast.AST | None = None) -> Ty:
        """Evaluates `node` in a boolean context (if/while/ternary/filter/and/or/not)."""
        if isinstance(node, ast.BoolOp):
            result = None
            for value in node.values:
                ty = self.test(value)
                result = ty if result is None else K.join(result, ty)
            return result or K.T_UNKNOWN
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.test(node.operand, statement)
        ty = self.expr(node)
        if ty.is_tensor:
            fix = fix_for("FL101", self, statement, node) if statement is not None else None
            self.report("FL101", node, self._branch_message(node, statement), fix=fix)
        elif ty.kind == K.NDARRAY:  # Dynamo traces arrays as tensors: the same data-dependent branch
            self.report("FL101", node, self._branch_message(node, statement))
        elif ty.ref == K.RANK:
            pass  # the tracer sees a plain int; Dynamo recompiles only for another rank, not another size
        elif ty.kind in (K.BOOL, K.INT, K.NUM) and ty.shape_derived:
            if self.mode != COMPILE:  # `if ph or pw:`: under the tracer, the truth of a 0-d tensor
                self.report_size_read(node, "Branch on a size: the trace keeps the way the example input went")
            elif not _raises(statement):
                self.report("FL301", node, "Branch on a tensor's shape: Dynamo specializes on it and "
                                           "recompiles when an input takes the other branch")
        elif ty.shape_derived and ty.kind != K.SHAPE:  # a size compared with a host value (one a break
            # made); a shape's truth value is only its rank
            self.report_size_read(node, "Branch on a size: the trace keeps the way the example input went")
        return ty

    def _branch_message(self, node: ast.expr, statement) -> str:
        kind = {ast.If: "`if`", ast.While: "`while`", ast.IfExp: "conditional expression",
                ast.comprehension: "comprehension filter"}.get(type(statement), "boolean operator")
        return f"{kind} depends on a tensor's value"

    # --- expressions ---------------------------------------------------------------------------
    def expr(self, node: ast.expr | None) -> Ty:
        if node is None:
            return K.T_NONE
        method = self._expressions.get(type(node))
        if method is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
            return K.T_UNKNOWN
        ty = method(self, node)
        if ty.kind == K.TENSOR and type(node) in GRAPH_OPS or ty.kind == K.UNKNOWN and type(node) in ARITHMETIC:
            self.segment_ops += 1  # (arithmetic on a value of unknown type: likely a tensor's)
        return ty

    def expr_Constant(self, node: ast.Constant) -> Ty:
        if isinstance(node.value, str) and len(node.value) <= 64:
            # a mode string passed on (`loss(x, y, reduction="sum")`): the callee's
            # `if reduction == "sum":` is folded, as Dynamo specializes on it
            return K.T_STR.but(ref=K.Literal(node.value))
        return literal_type(node.value)

    def expr_Name(self, node: ast.Name) -> Ty:
        name = node.id
        ty = self.env.get(name)
        if ty is not None:
            if name in self.clocks and self.break_count > self.clocks[name] and not self.dead:
                ty = ty.but(ref=K.WallClock(name, node))  # an input of the resumed part
                self.clock_reads.append(ty.ref)
            return ty
        if name in self.local_imports:
            return Ty(K.OBJ, ref=self.local_imports[name])
        ty = self.module.name_type(name)
        if ty is not None:
            return ty
        if name in self.module.globals:
            return self.global_type(name)
        return K.T_UNKNOWN

    def global_default(self, default: K.GlobalDefault) -> Ty:
        function = self.module.functions.get(default.name)
        value = Ty(K.FUNC, ref=function) if function is not None else self.global_type(default.name)
        return value if value.kind != K.UNKNOWN else default.fallback

    def global_type(self, name: str) -> Ty:
        value = self.module.globals[name]
        if isinstance(value, ast.Constant):
            return self.expr_Constant(value)
        if isinstance(value, (ast.Tuple, ast.List, ast.Dict)):
            literal = _literal_display_type(value)  # `CROP = (8, 8)`, `CFG = {"stride": (6, 6)}`
            if literal is not None:
                return literal
        if isinstance(value, (ast.Tuple, ast.List, ast.Dict, ast.Lambda)):
            # `HOOKS = [scale, report]`, `act = lambda x: ...`, `DECAY_FNS = {"cosine": _cosine, "linear": lambda ...}`,
            # `TRANSFORMS = (Flip(), Crop(8))`: an element may be any of the known ones
            return self.module_value(value)
        if isinstance(value, ast.Call):
            seeded = value.func.value if isinstance(value.func, ast.Attribute) and value.func.attr == "manual_seed" \
                else None  # `G = torch.Generator().manual_seed(0)`
            if isinstance(seeded, ast.Call):
                value = seeded
            callee = self.dotted(value.func) or ""
            if callee == "torch.Generator":
                return K.T_GENERATOR
            if callee.startswith("numpy.random.") and callee[13:] in NUMPY_GENERATOR_CLASSES:
                return K.T_NUMPY_GENERATOR  # `RNG = np.random.default_rng(0)`
            if callee == "logging.getLogger" or callee.endswith(".getLogger"):
                return K.T_LOGGER
            if callee == "torch.compile" and value.args and isinstance(value.args[0], ast.Name) \
                    and value.args[0].id in self.module.functions:
                # `fmt = torch.compile(_fmt)` called from compiled code: Dynamo inlines `_fmt`
                return Ty(K.FUNC, ref=self.module.functions[value.args[0].id])
            if callee.startswith("torch.") and callee.split(".")[-1][:1].islower() \
                    and callee not in K.TORCH_NON_TENSOR and not callee.startswith(("torch.nn.", "torch.jit.")):
                return K.T_TENSOR
            if callee == "torch.compiler.disable" or callee == "torch._dynamo.disable":
                return K.T_OBJ
            if callee.startswith(("io.", "threading.")) or K.is_training_object(callee):
                return Ty(K.OBJ, ref=callee)
            cls = self.module.resolve_class(callee) if callee else None
            if cls is not None or callee in BUILTIN_CONTAINERS:  # a workspace class's instance, `dict(zip(...))`
                return self.module_value(value)
        return K.T_UNKNOWN

    def module_value(self, node: ast.expr, depth: int = 0) -> Ty:
        """A module-level value made of constants, functions, displays and instances of workspace
        classes (`PIPELINE = Compose([Resize(8), Report()])`), evaluated without a scope."""
        if depth > 8:
            return K.T_UNKNOWN
        if isinstance(node, ast.Constant):
            return self.expr_Constant(node)
        if isinstance(node, ast.Lambda):  # `DECAY = {"cosine": lambda t: ...}`
            block = next((block for block in self.module.eager if any(
                n is node for statement in block.statements for n in ast.walk(statement))), None)
            return Ty(K.FUNC, ref=lambda_function(node, "<lambda>", block, self.module, None)) if block else K.T_UNKNOWN
        if isinstance(node, ast.Name):
            function = self.module.functions.get(node.id)
            if function is not None:
                return Ty(K.FUNC, ref=function)
            cls = self.module.classes.get(node.id)
            if cls is not None:
                return Ty(K.CLASS, ref=cls)
            value = self.module.globals.get(node.id)
            return self.module_value(value, depth + 1) if value is not None else K.T_UNKNOWN
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            types = [self.module_value(element, depth + 1) for element in node.elts]
            known = [ty for ty in types if ty.kind != K.UNKNOWN]
            return Ty(K.SEQ, ref=functools.reduce(K.join, known) if known else None,
                      items=tuple(types) if isinstance(node, ast.Tuple) else None)
        if isinstance(node, ast.Dict):
            known = [ty for ty in (self.module_value(v, depth + 1) for v in node.values) if ty.kind != K.UNKNOWN]
            return Ty(K.DICT, ref=functools.reduce(K.join, known) if known else None)
        if isinstance(node, ast.Call):
            dotted = self.dotted(node.func) or ""
            args = [self.module_value(arg, depth + 1) for arg in node.args]
            kwargs = {kw.arg: self.module_value(kw.value, depth + 1) for kw in node.keywords if kw.arg}
            cls = self.module.resolve_class(dotted)
            if cls is not None:
                return self.analysis.instance_type(self, cls, args, kwargs)
            if dotted in BUILTIN_CONTAINERS and not kwargs:  # the rules of a call in a body, reporting nothing
                self.quiet += 1
                try:
                    return builtin_call(self, node, dotted, args, kwargs)
                finally:
                    self.quiet -= 1
            if dotted == "functools.partial":
                return partial_of(args, kwargs)
            made = made_by_factory(self.module, node, lambda value: self.module_value(value, depth + 1))
            if made is not None:  # `make_logger("train")`: the def it returns, closing over the arguments
                return Ty(K.FUNC, ref=made)
        return K.T_UNKNOWN

    def dotted(self, node: ast.expr) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.env:
            return None
        head = self.local_imports.get(node.id) or self.module.imports.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])

    def expr_Attribute(self, node: ast.Attribute) -> Ty:
        owner = self.expr(node.value)
        attr = node.attr
        if owner.kind == K.TENSOR:
            if attr in K.TENSOR_ATTRS:
                return K.TENSOR_ATTRS[attr]
            if attr in ("T", "mT", "H", "mH", "data", "real", "imag"):
                return owner.but(zero_dim=False) if attr != "data" else owner
            if attr == "grad":
                return K.T_TENSOR.but(optional=True)
            return K.T_OBJ
        if owner.kind == K.NDARRAY and attr in ARRAY_ATTRS:  # sizes, as a tensor's (Dynamo traces arrays)
            if attr == "dtype" and isinstance(node.ctx, ast.Load):
                self.report("FL145", node, "`ndarray.dtype` of an array Dynamo traces as a tensor is not supported")
            return ARRAY_ATTRS[attr]
        if owner.kind in (K.MODULE, K.OBJ) and isinstance(owner.ref, ClassInfo) and isinstance(node.ctx, ast.Load):
            getter = owner.ref.lookup_method(attr)
            if getter is not None and _is_property(getter):  # Dynamo inlines the getter
                return self.call_unresumable(node, getter, [], owner, "Graph break inside a property getter")
        if owner.kind == K.MODULE:
            if isinstance(owner.ref, ClassInfo):
                self.guard_attribute(owner.ref, attr)
            value = self.module_attribute(owner, attr)
            rnn = _rnn_class(value) if isinstance(node.ctx, ast.Load) else None
            if rnn is not None:
                # Dynamo refuses the module where it first wraps it: at any read (`self.lstm.hidden_size`,
                # `isinstance(self.rnn, nn.LSTM)` when `__init__` chose an LSTM or a conv stack)
                self.report("FL123", node, f"`{rnn}` is not traced by Dynamo (allow_rnn=False)")
                self.skip_frame(node, f"`{rnn.rsplit('.', 1)[1]}` is not traced")
            return value
        if owner.kind == K.OBJ and isinstance(owner.ref, ClassInfo):  # a plain object: what __init__ stored
            if self.held_across_calls(node.value):
                self.guard_attribute(owner.ref, attr)
            return self.module_attribute(owner, attr)
        if owner.kind == K.SHAPE:
            return K.T_OBJ
        if owner.kind == K.OBJ and attr == "param_groups" and K.is_training_object(owner.ref):
            return K.seq_of(K.T_PARAM_GROUP)
        if owner.kind == K.SEQ and owner.ref == K.T_TENSOR and attr in RETURN_TYPE_FIELDS:
            return RETURN_TYPE_FIELDS[attr]  # `x.topk(k).indices`: a torch.return_types field
        dotted = self.dotted(node)
        if owner.kind == K.UNKNOWN and attr == "shape" and not dotted:
            return K.T_SHAPE  # of a local value of unknown type: in practice a tensor or an array
        if dotted:
            if dotted.startswith("torch."):
                last = dotted.rsplit(".", 1)[1]
                if last in K.DTYPE_NAMES and dotted.count(".") == 1:
                    return K.T_DTYPE
                if last[:1].isupper():
                    return Ty(K.CLASS, ref=dotted)
                return Ty(K.OBJ, ref=dotted)
            if dotted.startswith("math.") and dotted.count(".") == 1 and dotted[5:] in ("pi", "e", "inf", "nan", "tau"):
                return K.T_NUM
            function = self.module.resolve_function(dotted) if "." in dotted else None
            if function is not None:
                return Ty(K.FUNC, ref=function)
            return Ty(K.OBJ, ref=dotted)
        return K.T_UNKNOWN

    @staticmethod
    def _submodule(owner: Ty, attr: Ty) -> Ty:
        """`model.eval()` puts every submodule in eval mode too."""
        training = next((ty.ref for name, ty in owner.attrs or () if name == "training"), None)
        return K.in_mode(attr, training) if training is not None and isinstance(attr.ref, ClassInfo) else attr

    def module_attribute(self, owner: Ty, attr: str) -> Ty:
        cls = owner.ref
        for name, ty in owner.attrs or ():
            if name == attr:
                return self._submodule(owner, ty)
        if attr == "training":
            return K.T_BOOL
        if isinstance(cls, ClassInfo):
            attrs, reads = self.analysis.class_attributes(cls)
            self.result.reads.extend(reads)
            if attr in attrs:
                return self._submodule(owner, attrs[attr])
            method = cls.lookup_method(attr)
            if method is not None:
                return Ty(K.FUNC, ref=K.Bound(method, owner))
            return K.T_UNKNOWN
        if attr in K.NN_TENSOR_ATTRS:
            return K.T_TENSOR.but(optional=attr.startswith("bias"))
        return K.T_UNKNOWN

    def expr_Subscript(self, node: ast.Subscript) -> Ty:
        if self.dotted(node.value) in ("numpy.ogrid", "numpy.mgrid"):
            self.expr(node.slice)
            self.report("FL122", node, f"`{self.dotted(node.value)}[...]` is code Dynamo skips")
            return K.seq_of(K.T_NDARRAY)
        if isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
            registered = registered_functions(self, node.value.id, node.slice)
            if registered:  # `LOSSES[cfg.loss]`, filled by `@register(LOSSES, ...)`
                self.expr(node.slice)
                return Ty(K.FUNC, ref=tuple(registered))
        container = self.expr(node.value)
        if container.kind == K.SEQ and not isinstance(node.slice, (ast.Slice, ast.Tuple)):
            index = self.expr(node.slice)
            if index.is_tensor and isinstance(node.ctx, ast.Load):  # `LABELS[i]`: `i.__index__()` on the host
                self.report("FL102", node, "Indexing a Python list or tuple with a tensor reads its value on the host")
                return self.element_type(container)
        index = self.expr(node.slice)
        if container.kind == K.TENSOR:
            self.segment_ops += 1
            if isinstance(node.ctx, ast.Load):
                self.check_tensor_index(node, index)
            # `order[0]` of an index tensor (argsort, argmax(dim)...) is, in practice, a 0-d index;
            # `labels[i]` with `i` counting over a size (`range(x.shape[0])`) picks a batch row.
            scalar_pick = container.integer and index.kind == K.INT and not index.shape_derived \
                and not isinstance(node.slice, ast.Tuple)
            return K.T_TENSOR.but(boolean=container.boolean, integer=container.integer, zero_dim=scalar_pick)
        if container.kind == K.SHAPE:
            if index.is_tensor:
                self.report("FL102", node, "Python sequence indexed with a tensor: Dynamo reads its value")
            if isinstance(node.slice, ast.Slice):
                count = _last_count(node.slice)  # `x.shape[-2:]`: two sizes (`f(*hw, ref)` binds them)
                size = K.T_SHAPE_INT if container.shape_derived else K.T_INT
                return container.but(items=(size,) * count) if count else container
            return K.T_SHAPE_INT if container.shape_derived else K.T_INT
        if container.kind == K.SEQ:
            if container.items is not None and isinstance(node.slice, ast.Constant) \
                    and isinstance(node.slice.value, int) and -len(container.items) <= node.slice.value \
                    < len(container.items):
                return container.items[node.slice.value]
            if index.is_tensor:
                self.report("FL102", node, "Python sequence indexed with a tensor: Dynamo reads its value")
            if isinstance(node.slice, ast.Slice):
                return container
            return container.ref if isinstance(container.ref, Ty) else K.T_UNKNOWN
        if index.is_tensor and (container.kind == K.DICT or container.kind == K.OBJ and container.ref is None):
            self.report("FL102", node, "Python container indexed with a tensor: Dynamo reads its value")
        if container.kind == K.DICT:
            return container.ref if isinstance(container.ref, Ty) else K.T_UNKNOWN
        if container.kind == K.NDARRAY:
            if isinstance(node.ctx, ast.Load) and index.kind == K.NDARRAY and index.boolean:
                self.report("FL105", node, "Boolean-mask indexing of an array traced from a tensor: "
                                           "data-dependent size")
            return K.T_NDARRAY
        return K.T_UNKNOWN

    def check_tensor_index(self, node: ast.Subscript, index: Ty) -> None:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        part_types = [self.expr(part) for part in parts] if len(parts) > 1 else [index]
        # `x[tuple(argmax)]`, `x[list(idx)]`: a sequence of indices, each read like one
        part_types += [part.ref for part in part_types if part.kind == K.SEQ and isinstance(part.ref, Ty)]
        for part_type in part_types:
            if part_type.is_tensor and part_type.boolean:
                self.report("FL105", node, "Boolean-mask indexing: the result's size depends on the mask's values")
                return
            if part_type.is_tensor and part_type.zero_dim and part_type.integer:
                if self.mode == COMPILE:  # the tracer records an index op instead: nothing is read
                    self.report("FL104", node, "Indexing with a 0-d tensor reads its value on the host")
                return
            if part_type.ref == RANDOM_VALUE:
                self.report("FL124", node, "Indexing with a random.* value, a graph input: Dynamo reads it")
                return

    def expr_Slice(self, node: ast.Slice) -> Ty:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                ty = self.expr(part)
                if ty.is_tensor and ty.ref != RANDOM_VALUE:  # a random.* number is a graph input, not read
                    self.report("FL102", part, "Slice bound is a tensor: Dynamo reads its value")
                elif ty.kind == K.NDARRAY:  # Dynamo traces arrays as tensors
                    self.report("FL104", part, "Slice bound is a NumPy value traced as a tensor: Dynamo reads it")
        return K.T_OBJ

    def expr_Tuple(self, node) -> Ty:
        types, exact = [], True
        for element in node.elts:
            if not isinstance(element, ast.Starred):
                types.append(self.expr(element))
                continue
            unpacked = self.expr_Starred(element)  # `[b * k, c, *self.out_hw]`: its items, or one like them
            if unpacked.items is not None:
                types.extend(unpacked.items)
                continue
            exact = False
            types.append(Ty(K.INT, shape_derived=unpacked.shape_derived) if unpacked.kind == K.SHAPE else
                         unpacked.ref if unpacked.kind == K.SEQ and isinstance(unpacked.ref, Ty) else K.T_UNKNOWN)
        if types and all(t.kind == K.INT or t.kind == K.NUM for t in types):
            return K.Ty(K.SHAPE, shape_derived=any(t.shape_derived for t in types))
        if types and all(t == types[0] for t in types):
            element = types[0]
        elif types and all(t.kind == types[0].kind for t in types) and types[0].kind in (K.MODULE, K.OBJ, K.FUNC,
                                                                                            K.SHAPE):
            # `[nn.Conv2d(...), nn.GroupNorm(...)]`, `[Flip(), Crop()]`, rows of numbers
            element = functools.reduce(K.join, types)
        elif types:
            element = K.T_TENSOR if any(t.maybe_tensor for t in types) else K.T_UNKNOWN
        else:
            element = None  # no elements yet: a join with a filled sequence takes its elements
        return Ty(K.SEQ, ref=element, items=tuple(types) if isinstance(node, ast.Tuple) and exact else None)

    expr_List = expr_Tuple
    expr_Set = expr_Tuple

    def expr_Dict(self, node: ast.Dict) -> Ty:
        for key in node.keys:
            if key is not None:
                self.expr(key)
        values = [self.expr(value) for value in node.values]
        if not values:
            return Ty(K.DICT)
        if None in node.keys:  # a `{**other}`, whose value types are not followed
            return Ty(K.DICT, ref=K.T_UNKNOWN)
        # `{"s": self.single_step, "m": self.multi_step}[mode]`: a call tries each
        return Ty(K.DICT, ref=functools.reduce(K.join, values))

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Ty:
        lazy = False
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                ty = self.expr(value.value)
                # `f"{t}"` and `f"{t:.3f}"` are formatted lazily (the break is where the string is
                # used), but a conversion (`{t!r}`, `{t!s}`) formats the tensor right here.
                if ty.is_tensor and value.conversion != -1:
                    self.report("FL114", value, "Tensor converted with !r/!s in an f-string")
                lazy = lazy or ty.is_tensor and value.conversion == -1
        return K.T_TENSOR_TEXT if lazy else K.T_STR

    def expr_BinOp(self, node: ast.BinOp) -> Ty:
        if _is_item_call(node.left):
            right = self.expr(node.right)
            if right.is_tensor:
                self.item_next_to_tensor.add(id(node.left))
            left = self.expr(node.left)
        else:
            left = self.expr(node.left)
            if _is_item_call(node.right) and left.is_tensor:
                self.item_next_to_tensor.add(id(node.right))
            right = self.expr(node.right)
        if isinstance(node.op, ast.Mod) and left.kind == K.STR and right.maybe_tensor:
            self.report("FL114", node, "Tensor formatted with `%`: needs its values")
        return self.binary(left, right, node)

    def binary(self, left: Ty, right: Ty, node: ast.BinOp | ast.AugAssign) -> Ty:
        clock = next((ty.ref for ty in (left, right) if isinstance(ty.ref, K.WallClock)), None)
        value = self.arithmetic(left, right, node)
        if clock is not None and value.kind == K.TENSOR:
            self.specialize_clock(clock)  # a constant of the graph
        elif clock is not None and value.kind in (K.NUM, K.INT, K.DATA) and value.ref is None:
            value = value.but(ref=clock)
        return value

    def arithmetic(self, left: Ty, right: Ty, node: ast.BinOp | ast.AugAssign) -> Ty:
        op = node.op
        if RANDOM_VALUE in (left.ref, right.ref) and {left.kind, right.kind} & {K.INT, K.NUM, K.BOOL, K.DATA}:
            self.report("FL124", node, "Python arithmetic on a random.* value, which Dynamo made a graph input")
            self.skip_frame(node, "Arithmetic on a random.* value")
            return K.T_NUM  # computed by Python after the break
        if left.kind == K.TENSOR or right.kind == K.TENSOR:
            tensor = left if left.kind == K.TENSOR else right
            other = right if tensor is left else left
            both_bool = tensor.boolean and (other.boolean or other.kind == K.BOOL)
            logical = isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor))
            return K.tensor(tensor.zero_dim and (other.kind != K.TENSOR or other.zero_dim), both_bool and logical,
                            tensor.integer and (other.integer or other.kind == K.INT) and not isinstance(op, ast.Div))
        if left.kind == K.NDARRAY or right.kind == K.NDARRAY:  # `(x > 0) & (x < w)` stays a mask
            both_bool = all(t.boolean or t.kind == K.BOOL for t in (left, right))
            return Ty(K.NDARRAY, boolean=True) if both_bool and isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) \
                else K.T_NDARRAY
        if left.kind == K.SEQ and right.kind == K.SEQ and {left.ref, right.ref} & {K.T_UNKNOWN, None}:
            known = right if left.ref in (K.T_UNKNOWN, None) else left  # `layers = []; layers += [nn.Conv2d()]`
            if isinstance(known.ref, Ty) and known.ref.kind in (K.MODULE, K.OBJ, K.FUNC):
                return K.seq_of(known.ref)
        if left.kind == K.SEQ or right.kind == K.SEQ:
            return left if left.kind == K.SEQ else right
        if left.kind == K.SHAPE and right.kind in (K.SHAPE, K.SEQ):
            return K.T_SHAPE
        if left.kind == K.STR or right.kind == K.STR:
            return K.T_STR
        numeric = (K.INT, K.NUM, K.BOOL, K.DATA)
        if left.kind in numeric and right.kind in numeric:
            shape = left.shape_derived or right.shape_derived
            if K.DATA in (left.kind, right.kind):  # a host value; with a size in it, tracing reads the size
                return K.T_DATA.but(shape_derived=shape)
            if left.kind == K.INT and right.kind == K.INT and not isinstance(op, ast.Div):
                return (K.T_RANK_INT if K.rank_only(left, right) else K.T_SHAPE_INT) if shape else K.T_INT
            return Ty(K.NUM, shape_derived=shape)
        return K.T_UNKNOWN

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Ty:
        if isinstance(node.op, ast.Not):
            operand = self.test(node.operand, node)
            return K.T_BOOL if not operand.maybe_tensor else K.T_BOOL_TENSOR
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.Invert) and operand.kind == K.TENSOR:
            return operand
        return operand if operand.kind != K.BOOL else K.T_INT

    def expr_BoolOp(self, node: ast.BoolOp) -> Ty:
        # `a and b` / `a or b` test every operand but the last for truthiness.
        result = None
        for index, value in enumerate(node.values):
            ty = self.test(value, node) if index < len(node.values) - 1 else self.expr(value)
            result = ty if result is None else K.join(result, ty)
        return result or K.T_UNKNOWN

    def expr_Compare(self, node: ast.Compare) -> Ty:
        types = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
        if any(t.ref == "data_ptr" for t in types):
            self.report("FL106", node, "Comparing data pointers: tensor identity is not traceable")
            return K.T_DATA
        if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return K.T_BOOL
        if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            return K.T_BOOL
        if any(t.kind == K.TENSOR for t in types):
            zero = all(t.zero_dim or t.kind != K.TENSOR for t in types)
            return Ty(K.TENSOR, boolean=True, zero_dim=zero)
        if any(t.kind == K.NDARRAY for t in types):
            return Ty(K.NDARRAY, boolean=True)
        shape = any(t.shape_derived for t in types)
        if any(t.kind == K.DATA for t in types):
            return K.T_DATA.but(shape_derived=shape)
        return (K.T_RANK_BOOL if K.rank_only(*types) else K.T_SHAPE_BOOL) if shape else K.T_BOOL

    def expr_IfExp(self, node: ast.IfExp) -> Ty:
        known = self.static_truth(node.test)
        if known is not None:  # folded while tracing
            return self.expr(node.body if known else node.orelse)
        self.test(node.test, node)
        body, orelse = self.expr(node.body), self.expr(node.orelse)
        # `POSTPROCESS if hooks is None else hooks`: the code the known side holds may run
        if K.holds_code(body) and not K.holds_code(orelse) and _unknown_inside(orelse):
            return body
        if K.holds_code(orelse) and not K.holds_code(body) and _unknown_inside(body):
            return orelse
        return K.join(body, orelse)

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Ty:
        value = self.expr(node.value)
        self.env[node.target.id] = value
        return value

    def expr_Lambda(self, node: ast.Lambda) -> Ty:
        """A function value (`self._better = lambda a, b: a < b - delta`), closing over the
        variables it reads as they are now; a call walks its body."""
        info = lambda_function(node, f"{self.function.qualname}.<lambda>", self.function.block, self.module,
                               self.function.cls)
        return Ty(K.FUNC, ref=K.Wrapped(info, self.closure_for(info)))

    def expr_Starred(self, node: ast.Starred) -> Ty:
        self.unpacks_generator(node.value)
        return self.expr(node.value)

    def comprehension(self, node, elements: list[ast.expr]) -> list[Ty]:
        """Walks a comprehension in this frame, the way Dynamo inlines it (comprehensions.py)."""
        saved = dict(self.env)
        breaks = self.break_count
        iterables = []
        traced = self.mode == COMPILE and not self.quiet and not isinstance(node, ast.GeneratorExp) \
            and comprehensions.own_frame_traced(self, node)
        in_python = self.dead  # a skipped part of the frame: Python calls the comprehension
        revived = False
        for index, generator in enumerate(node.generators):
            iterable = self.expr(generator.iter)  # the first one by the enclosing frame
            self.report_tensor_iteration(generator.iter, iterable)
            if index == 0:
                iterator = comprehensions.iterator_kind(self, generator.iter, iterable)
                lost = isinstance(node, ast.GeneratorExp) or iterator in comprehensions.LOST
                if in_python and traced and iterator is not None:
                    # Dynamo compiles the comprehension's own frame: with a tuple or range iterator
                    # it traces the body (a loop: its first break ends that frame), else nothing
                    revived = iterator in comprehensions.TRACEABLE_INPUTS
                    if not revived:
                        self._record("FL135", node, None, None, None)
                    self.dead = not revived
                self.unresumable_depth += lost or revived
            iterables.append((generator.iter, iterable))
            self.assign(generator.target, self.element_type(iterable), node)
            for condition in generator.ifs:
                self.test(condition, generator)
        types = [self.expr(element) for element in elements]
        self.unresumable_depth -= lost or revived
        if revived:
            self.dead, self.dead_after_this = True, False
        self.env = saved
        if self.break_count == breaks:  # a break inside leaves the comprehension to Python
            for iterable_node, iterable in iterables:
                self.report_unrolled(iterable_node, iterable)
            if traced and not in_python and iterator not in (None, *comprehensions.TRACEABLE_INPUTS):
                self.python_reruns.append(node)
        elif not in_python and self.mode == COMPILE and not self.quiet:
            if lost and node not in self.unpacked_generators:  # Dynamo could not rebuild the iterator: it gave up on the frame
                code = comprehensions.LOST.get(iterator, "FL134")
                self._record(code, node, None, None, None)
            if traced and iterator not in comprehensions.REBUILT:
                self._record("FL135", node, None, None, None)
        return types

    def expr_ListComp(self, node) -> Ty:
        return K.seq_of(self.comprehension(node, [node.elt])[0])

    expr_SetComp = expr_ListComp
    expr_GeneratorExp = expr_ListComp

    def expr_DictComp(self, node) -> Ty:
        return Ty(K.DICT, ref=self.comprehension(node, [node.key, node.value])[1])

    def expr_Await(self, node) -> Ty:
        return self.expr(node.value)

    def expr_Yield(self, node) -> Ty:
        if node.value is not None:
            self.expr(node.value)
        return K.T_UNKNOWN

    expr_YieldFrom = expr_Yield

    def element_type(self, iterable: Ty) -> Ty:
        if iterable.kind == K.SEQ:
            return iterable.ref if isinstance(iterable.ref, Ty) else K.T_UNKNOWN
        if iterable.kind == K.TENSOR:
            # Iterating an index tensor (argmax(-1), nonzero...) yields indices, in practice 0-d.
            return K.T_TENSOR.but(boolean=iterable.boolean, integer=iterable.integer, zero_dim=iterable.integer)
        if iterable.kind == K.SHAPE:  # a tuple of Python ints is one too: its items are not sizes
            return K.T_SHAPE_INT if iterable.shape_derived else K.T_INT
        if iterable.kind == K.MODULE and iterable.ref == "torch.nn.ModuleList":
            return Ty(K.MODULE)
        if iterable.kind == K.NDARRAY:  # Dynamo traces arrays as tensors: so are their rows and items
            return K.T_NDARRAY
        return K.T_UNKNOWN

    def expr_Call(self, node: ast.Call) -> Ty:
        if isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "max", "min") and node.args:
            self.unpacks_generator(node.args[0])
        return evaluate_call(self, node)

    def specialize_clock(self, clock: K.WallClock) -> None:
        """A clock reading (or a number computed from one) that a resumed part of the frame read as
        a local is specialized, guarded by value, when that part breaks again later or the value
        enters tensor arithmetic; the next call's clock reads otherwise, so it recompiles
        (measured on 2.13; a part that ends without a break keeps it symbolic: returned, stored,
        compared or rounded). Reported where the local was read, as Dynamo's guard names it."""
        if clock in self.clock_reads:
            self.report("FL302", clock.read, f"`{clock.name}` holds a clock reading: the code resumed after a "
                                             "graph break specializes on its value, so every call recompiles")

    def unpacks_generator(self, node: ast.expr) -> None:
        """A generator expression unpacked whole where it is made (`a, b = (f(s) for s in xs)`,
        `tuple(...)`, `max(...)`, `[*(...)]`): a break inside makes Dynamo give up on the frame
        without trying to rebuild the generator, so nothing is reported at the expression
        (measured on 2.13; `sum(...)`/`any(...)` consume it step by step: GB8335 there)."""
        if isinstance(node, ast.GeneratorExp):
            self.unpacked_generators.add(node)

    # --- user functions ------------------------------------------------------------------------
    def call_method(self, node: ast.Call, method: FunctionInfo, args: list[Ty], kwargs: dict[str, Ty],
                    receiver: Ty) -> Ty:
        """`obj.m(...)` or `Cls.m(...)`: binds `self`/`cls` the way the method's decorators say."""
        decorators = _decorator_names(method)
        if "staticmethod" in decorators:
            return self.call_user(node, method, args, kwargs)
        if "classmethod" in decorators:
            return self.call_user(node, method, args, kwargs, receiver=Ty(K.CLASS, ref=receiver.ref))
        if receiver.kind == K.CLASS:  # `Base.forward(self, x)`: self comes as an argument
            return self.call_user(node, method, args, kwargs)
        if receiver.kind == K.OBJ and _is_stub(method):
            # `cb.on_batch_end(...)` on a `Callback` base whose hook does nothing: the object is
            # one of the subclasses that override it, and any of them may run
            overrides = [(cls, cls.methods[method.name]) for cls in _subclasses(receiver.ref, self.module)
                         if method.name in cls.methods]
            if overrides:
                return functools.reduce(K.join, [
                    self.call_user(node, override, args, kwargs, receiver=receiver.but(ref=cls))
                    for cls, override in overrides])
        return self.call_user(node, method, args, kwargs, receiver=receiver)

    def made_here(self, expr: ast.expr, value: Ty | None) -> bool:
        """Whether `expr` is a user-class object made in this frame: a local bound to one, or
        the construction itself (`SeriesScaler().fit(x)`)."""
        if isinstance(expr, ast.Name):
            return expr.id in self.local_objects
        return isinstance(expr, ast.Call) and value is not None and value.kind == K.OBJ \
            and isinstance(value.ref, ClassInfo)

    def call_user(self, node: ast.Call, callee: FunctionInfo, args: list[Ty], kwargs: dict[str, Ty],
                  receiver: Ty | None = None, closure: tuple | None = None) -> Ty:
        """Walks a call of `callee`; `closure` (a decorator's wrapper, or the function it wraps)
        means: call it as it is, with these enclosing variables."""
        call_span = self.relative_span(node)
        if callee.node is None:  # does not parse (yet): remember to look again once it does
            self.result.observations.append((callee, None, call_span, UNKNOWN_OUTCOME))
            return K.T_UNKNOWN
        if callee.disabled:
            self.report("FL130", node, f"`{callee.qualname}` is excluded from compilation "
                                       f"(torch.compiler.disable): the graph breaks around the call")
            return K.T_UNKNOWN
        if closure is None and callee.node.decorator_list:
            wrapper = decorated(callee, self.expr)
            if wrapper is not None:  # the call runs the decorator's wrapper, which gets self too
                return self.call_user(node, wrapper.function, [receiver, *args] if receiver else args, kwargs,
                                      closure=wrapper.closure)
        nested = callee.qualname.startswith(self.function.qualname + ".")
        if self.dead and self.mode == COMPILE and not closure and not nested:
            # This part of the frame runs eagerly: Dynamo compiles the callee as a frame of its
            # own, whose arguments are inputs (measured on 2.13: a 0-d index tensor passed in is
            # indexed in the graph, while one made by iterating a tensor is read on the host).
            # Python values passed in stay what they are (Dynamo specializes on them).
            bound, guessed = bind_parameters(callee, args, kwargs, receiver), root_parameters(callee)
            if not any(comprehensions.holds_tensor(ty) or ty.kind == K.UNKNOWN for ty in bound) \
                    and not comprehensions.names_torch(self, callee):
                return _displayed_return(callee)  # no tensor in its frame: Dynamo leaves it to Python
            params = tuple(g if b.kind in (K.UNKNOWN, K.TENSOR) else b for b, g in zip(bound, guessed)) \
                + bound[len(guessed):]
            if receiver is not None:
                params = (receiver, *params[1:])
        else:
            params = bind_parameters(callee, args, kwargs, receiver)
        if closure:
            params += (closure,)
        elif nested:
            params += (self.closure_for(callee),)
        outcome = self.analysis.evaluate(callee, self.mode, params, self.chain + ((self.function, call_span),),
                                         self.depth + 1)
        self.result.observations.append((callee, params, call_span, outcome))
        returns, breaks, stored = outcome
        self.stored_attributes |= stored
        # Resuming after the call would need the object rebuilt (inside a loop Dynamo gives up on
        # the frame anyway, without trying).
        if breaks and self.mode == COMPILE and not self.dead and self.resumable_here() \
                and isinstance(getattr(node, "func", None), ast.Attribute) and self.made_here(node.func.value, receiver):
            self.report("FL128", node, f"`{callee.qualname}` breaks on an object made in this function: "
                                       "Dynamo cannot rebuild it")
            self.die(node, "Graph break on an object made in this function")
            return returns
        if breaks and self.mode == COMPILE and not self.dead:
            self.frame_breaks()  # inlining stops at the callee's break: the break is at this call
            self.callee_breaks += 1
            if self.dead_after_this:
                self.die(node)
            else:
                self.resume_pending = True
        if returns.kind == K.UNKNOWN and callee.name == "forward":
            return K.T_TENSOR
        if returns.kind in (K.UNKNOWN, K.NONE) and callee.node.returns is not None:
            # `def optimizers(self) -> Optimizer` returning an attribute __init__ set to None
            annotated = annotation_type(callee.module, callee.node.returns)
            if annotated.kind != K.UNKNOWN:
                return annotated
        return returns


def _last_count(part: ast.Slice) -> int | None:
    """How many items `[-k:]` keeps, whatever the sequence's length."""
    lower = part.lower
    if part.upper is None and part.step is None and isinstance(lower, ast.UnaryOp) \
            and isinstance(lower.op, ast.USub) and isinstance(lower.operand, ast.Constant) \
            and isinstance(lower.operand.value, int) and not isinstance(lower.operand.value, bool):
        return lower.operand.value
    return None


def _raises(statement) -> bool:
    """`if L < 3: raise ValueError(...)`: the other way is an error, not another specialization."""
    return isinstance(statement, ast.If) and bool(statement.body) and isinstance(statement.body[-1], ast.Raise)


def _returns_before_looping(positions: list[tuple[list, int]]) -> bool:
    """Whether, in bytecode order, a `return` comes before a jump back to the loop's head in the
    code after the current statement. `positions`: (statement list, index) from the loop's body
    inwards. CPython 3.11 lays branches out in source order; the jump over an `else` branch of an
    `if` that ends the loop body goes straight back to the head."""
    list_tails, statement_tails = [], []
    for level, (statements, index) in enumerate(positions):
        parent = positions[level - 1][0][positions[level - 1][1]] if level else None
        list_tail = level == 0 or (statement_tails[-1] and isinstance(parent, ast.If))
        list_tails.append(list_tail)
        statement_tails.append(list_tail and index == len(statements) - 1)

    def events():
        statements, index = positions[-1]
        yield from _exits(statements[index], statement_tails[-1])
        yield from _list_exits(statements[index + 1:], list_tails[-1])
        for level in range(len(positions) - 2, -1, -1):
            statements, index = positions[level]
            parent = statements[index]
            if isinstance(parent, ast.If) and parent.orelse and positions[level + 1][0] is parent.body:
                if statement_tails[level]:
                    yield "back"
                yield from _list_exits(parent.orelse, statement_tails[level])
            yield from _list_exits(statements[index + 1:], list_tails[level])
        yield "back"

    return next(events()) == "return"


def _list_exits(statements: list[ast.stmt], tail: bool):
    for index, statement in enumerate(statements):
        yield from _exits(statement, tail and index == len(statements) - 1)


def _exits(statement: ast.stmt, tail: bool):
    """'return' and 'back' (a jump to the enclosing loop's head) in `statement`, in bytecode order;
    `tail`: the statement ends the loop body."""
    if isinstance(statement, ast.Return):
        yield "return"
    elif isinstance(statement, ast.Continue):
        yield "back"
    elif isinstance(statement, ast.If):
        yield from _list_exits(statement.body, tail)
        if statement.orelse:
            if tail:
                yield "back"
            yield from _list_exits(statement.orelse, tail)
    elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
        # A nested loop's jumps back land inside it, after the break: only its returns count.
        yield from (event for event in _list_exits(statement.body + statement.orelse, False) if event == "return")
    elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                yield from _exits(child, False)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                yield from _list_exits(child.body, False)


def _handlers(cls, prefix: str) -> dict:
    """Node type → the `prefix + type name` method of `cls` that handles it (a dict lookup per
    node instead of building a name and looking it up)."""
    return {getattr(ast, name[len(prefix):]): getattr(cls, name) for name in dir(cls)
            if name.startswith(prefix) and isinstance(getattr(ast, name[len(prefix):], None), type)}


FunctionWalker._statements, FunctionWalker._expressions = _handlers(FunctionWalker, "stmt_"), \
    _handlers(FunctionWalker, "expr_")


def decorated(function: FunctionInfo, argument_type) -> K.Wrapped | None:
    """What a call to `function` runs when user decorators wrap it (`@timed("fwd")`,
    `@nan_guard`): the wrapper def each one returns, innermost first, whose `fn` is the
    function (or the wrapper) below it. Decorators that return the function itself
    (registries) or are not in the workspace leave it as it is. `argument_type` types the
    arguments of a decorator factory."""
    inner = K.Wrapped(function, ())
    for decorator in reversed(function.node.decorator_list):
        inner = _wrap(function.module, decorator, inner, argument_type) or inner
    return inner if inner.function is not function else None


def lambda_function(node: ast.Lambda, qualname: str, block, module, cls) -> FunctionInfo:
    """A lambda as a function of its own (a def returning its expression), in `block`."""
    body = ast.copy_location(ast.Return(value=node.body), node.body)
    definition = ast.copy_location(ast.FunctionDef(name="<lambda>", args=node.args, body=[body], decorator_list=[],
                                                   returns=None, type_comment=None), node)
    return FunctionInfo(qualname, block, module, cls, _node=definition)


def made_by_factory(module, call: ast.Call, argument_type) -> K.Wrapped | None:
    """`make_logger("train")`, `@timed("fwd")`: the def a workspace function returns, closing over
    the call's arguments (typed by `argument_type`)."""
    factory = _workspace_function(module, call.func)
    node = _returned_def(factory.node) if factory is not None and factory.node is not None else None
    if node is None:
        return None
    positional = [*factory.node.args.posonlyargs, *factory.node.args.args]
    closure = [(arg.arg, argument_type(value)) for arg, value in zip(positional, call.args)]
    closure += [(kw.arg, argument_type(kw.value)) for kw in call.keywords if kw.arg]
    made = FunctionInfo(f"{factory.qualname}.{node.name}", factory.block, factory.module, None, _node=node)
    return K.Wrapped(made, (CLOSURE,) + tuple(sorted(closure, key=lambda item: item[0])))


def _wrap(module, decorator: ast.expr, inner: K.Wrapped, argument_type) -> K.Wrapped | None:
    closure = []
    if isinstance(decorator, ast.Call):  # a factory: `@timed("fwd")` → deco → wrapper
        made = made_by_factory(module, decorator, argument_type)
        if made is None:
            return None
        deco, closure = made.function, list(made.closure[1:])
    else:
        deco = _workspace_function(module, decorator)
    wrapper_node = _returned_def(deco.node) if deco is not None and deco.node is not None else None
    if wrapper_node is None or not deco.node.args.args:
        return None
    closure.append((deco.node.args.args[0].arg, Ty(K.FUNC, ref=inner)))
    wrapper = FunctionInfo(f"{deco.qualname}.{wrapper_node.name}", deco.block, deco.module, None, _node=wrapper_node)
    return K.Wrapped(wrapper, (CLOSURE,) + tuple(sorted(closure, key=lambda item: item[0])))


def _workspace_function(module, node: ast.expr) -> FunctionInfo | None:
    dotted = module.dotted(node)
    return None if not dotted or dotted.startswith(EXTERNAL_PREFIXES) else module.resolve_function(dotted)


def literal_type(value) -> Ty:
    if value is None:
        return K.T_NONE
    if isinstance(value, bool):
        return K.T_BOOL
    if isinstance(value, int):
        return K.T_INT
    if isinstance(value, (float, complex)):
        return K.T_NUM
    if isinstance(value, str):
        return K.T_STR
    return K.T_OBJ


def _literal_display_type(node: ast.expr) -> Ty | None:
    """A tuple, list or dict written with constants only (nested ones too); None otherwise."""
    if isinstance(node, ast.Constant):
        return literal_type(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        elements = [_literal_display_type(element) for element in node.elts]
        if None in elements:
            return None
        return K.seq_of(functools.reduce(K.join, elements) if elements else K.T_UNKNOWN)
    if isinstance(node, ast.Dict) and all(isinstance(key, ast.Constant) for key in node.keys):
        values = [_literal_display_type(value) for value in node.values]
        if None in values:
            return None
        return Ty(K.DICT, ref=functools.reduce(K.join, values) if values else None)
    return None


def _is_container(ty: Ty) -> bool:
    """A list or dict (`defaultdict(list)` and the other collections too)."""
    return ty.kind in (K.SEQ, K.DICT) or ty.kind == K.OBJ and ty.ref in GLOBAL_CONTAINERS


def _unknown_inside(ty: Ty) -> bool:
    """Unknown, or a container of values of unknown type."""
    if ty.kind in (K.SEQ, K.DICT):
        return not isinstance(ty.ref, Ty) or _unknown_inside(ty.ref)
    return ty.kind == K.UNKNOWN


# Builtins that build a container from iterables; module_value follows them for module constants
# (`LABEL_MAP = dict(enumerate(GESTURES))`). Shadowed names resolve to the module's own first.
BUILTIN_CONTAINERS = {"dict", "list", "tuple", "set", "frozenset", "sorted", "reversed", "enumerate", "zip"}


def _may_hold_tensor(ty: Ty) -> bool:
    """What `has_tensor_in_frame` would find a tensor (or module, or array) in, as far as the type
    tells: a list or tuple is looked into (`zip(a.tolist(), b.tolist())` holds none)."""
    if ty.kind == K.SEQ:
        parts = [*([ty.ref] if isinstance(ty.ref, Ty) else []), *(ty.items or ())]
        return not parts or any(map(_may_hold_tensor, parts))
    return ty.maybe_tensor or ty.kind in (K.MODULE, K.NDARRAY, K.UNKNOWN) or (
        ty.kind == K.DICT and isinstance(ty.ref, Ty) and ty.ref.kind in (K.TENSOR, K.MODULE))


def constant_type(node: ast.expr) -> Ty:
    """The type of a literal (decorator factory arguments at a root); anything else: unknown."""
    return literal_type(node.value) if isinstance(node, ast.Constant) else K.T_UNKNOWN


def _displayed_return(function: FunctionInfo) -> Ty:
    """What a function returns as far as its annotation, or its source without walking it, says:
    a list when every `return` gives a list display or a name bound to one (`spans = []` ...
    `return spans`); else unknown."""
    if function.node.returns is not None:
        return annotation_type(function.module, function.node.returns)
    lists = set()
    for node in ast.walk(function.node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and isinstance(
                    node.value, ast.Tuple) else [(target, node.value)]
                lists.update(t.id for t, v in pairs if isinstance(t, ast.Name) and isinstance(v, (ast.List, ast.ListComp)))
    values = [node.value for node in ast.walk(function.node) if isinstance(node, ast.Return)]
    if values and all(isinstance(v, (ast.List, ast.ListComp)) or isinstance(v, ast.Name) and v.id in lists
                      for v in values):
        return K.seq_of(K.T_UNKNOWN)
    return K.T_UNKNOWN


def _is_generator(function: FunctionInfo) -> bool:
    if "yield" not in function.block.text:
        return False
    pending = list(function.node.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _returned_def(node: ast.FunctionDef) -> ast.FunctionDef | None:
    """The nested def a decorator returns (`def deco(fn): def wrapper(...): ...; return wrapper`)."""
    defs = {statement.name: statement for statement in node.body
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for statement in node.body:
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Name) and statement.value.id in defs:
            return defs[statement.value.id]
    return None




def _argument_names(node: ast.FunctionDef) -> set[str]:
    return {arg.arg for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}


def _is_stub(function: FunctionInfo) -> bool:
    """A body that only documents, passes, returns None or raises NotImplementedError: a hook
    meant to be overridden."""
    node = function.node
    if node is None:
        return False
    for statement in node.body:
        value = getattr(statement, "value", None)
        if isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and isinstance(value, ast.Constant):
            continue  # `pass`, a docstring, `...`
        if isinstance(statement, ast.Return) and (value is None or isinstance(value, ast.Constant)
                                                  and value.value is None):
            continue
        if isinstance(statement, ast.Raise) and statement.exc is not None \
                and "NotImplementedError" in ast.dump(statement.exc):
            continue
        return False
    return True


def _subclasses(cls: ClassInfo, module) -> list[ClassInfo]:
    """Classes of `cls`'s module and of `module` that derive from `cls`."""
    def derives(candidate: ClassInfo, seen: set) -> bool:
        for base in candidate.module.base_classes(candidate):
            if base is cls or (base.module.path, base.name) not in seen and (
                    seen.add((base.module.path, base.name)) or derives(base, seen)):
                return True
        return False

    modules = [cls.module] if module is cls.module else [cls.module, module]
    return [candidate for index in modules for candidate in index.classes.values()
            if candidate is not cls and derives(candidate, set())]


def _decorator_names(function: FunctionInfo) -> set[str]:
    """`@staticmethod`, `@functools.wraps(f)`...: the last name of each decorator."""
    node = function.node
    names = set()
    for decorator in node.decorator_list if node is not None else ():
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, (ast.Name, ast.Attribute)):
            names.add(target.id if isinstance(target, ast.Name) else target.attr)
    return names


def _is_property(function: FunctionInfo) -> bool:
    return "property" in _decorator_names(function)


def _reads_self_attribute(node: ast.expr, attr: str) -> bool:
    return any(isinstance(child, ast.Attribute) and child.attr == attr and isinstance(child.value, ast.Name)
               and child.value.id == "self" for child in ast.walk(node))


def _class_key(cls: ClassInfo) -> tuple:
    """Names a class across edits (a ClassInfo is replaced when its file's interface changes)."""
    return cls.module.path, cls.name


def _before(a: ast.AST, b: ast.AST) -> bool:
    return (a.lineno, a.col_offset) < (b.lineno, b.col_offset)


def _is_item_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "item" \
        and not node.args


# torch.nn classes none of which derives from another: `isinstance` between them is equality
LEAF_MODULE_CLASSES = {f"torch.nn.{name}" for name in (
    "RNN", "GRU", "LSTM", "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "Sequential", "ModuleList", "ModuleDict",
    "Identity", "Dropout", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "MaxPool1d", "MaxPool2d", "AvgPool1d",
    "AvgPool2d", "MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer")}


def _rnn_class(value: Ty) -> str | None:
    """The RNN class a module value is, or may be (one of its alternatives)."""
    if value.kind != K.MODULE:
        return None
    return next((cls for cls in (value.ref if isinstance(value.ref, tuple) else (value.ref,))
                 if cls in RNN_MODULES), None)


def _merge(a: dict, b: dict) -> dict:
    merged = dict(a)
    for name, ty in b.items():
        merged[name] = K.join(merged[name], ty) if name in merged else ty
    return merged


def _char_column(line: str, byte_column: int) -> int:
    if line.isascii():
        return byte_column
    return len(line.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))
