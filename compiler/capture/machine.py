"""The capture: run one unit of the function (from its start or a resume point) on real inputs,
interpreting statements, recording regions, and emitting + running the transformed program."""
from __future__ import annotations

import ast
import sys

import torch

from . import resume
from .ambient import Ambient
from .calls import CallMixin
from .emit import CaptureError, EmitMixin
from .frames import Block, Call, Loop, With
from .guards import GuardSet, constant_like
from .interp import LIBRARY_MODULES, ExprMixin
from .program import Jump, Program, Raised
from .stores import StoreMixin
from .tensors import Tracer
from .values import INPLACE_BINOPS, ArgSource, Break, Closure, Ext, TVar, VarSource


class BreakInfo:
    """A graph break as explain() reports it."""

    def __init__(self, filename, line, col, end_line, end_col, reason, rule, function, code):
        self.filename, self.line, self.col, self.end_line, self.end_col = filename, line, col, end_line, end_col
        self.reason, self.rule, self.function, self.code = reason, rule, function, code

    @property
    def gb_type(self):
        from ...analysis.rules import RULES
        rule = RULES.get(self.rule) if self.rule else None
        return rule.gb_type if rule else None

    def __repr__(self):
        return f"BreakInfo({self.line}:{self.col} {self.rule} {self.reason})"


class Loc:
    __slots__ = ("filename", "line", "col", "function", "code")

    def __init__(self, filename, line, col, function, code):
        self.filename, self.line, self.col, self.function, self.code = filename, line, col, function, code

    def stack_trace(self):
        return f'  File "{self.filename}", line {self.line}, in {self.function}\n    {self.code}\n'


_GRAD_CONTEXTS = {torch.no_grad: False, torch.enable_grad: True}
_FINITE_ITERABLES = (zip, enumerate, reversed, range, set, frozenset, str, type({}.keys()), type({}.values()),
                     type({}.items()), type(reversed([])), type(iter([])), type(iter(())))
_AUTOCASTS = (torch.autocast, torch.amp.autocast, torch.cpu.amp.autocast, torch.cuda.amp.autocast)


class Capture(ExprMixin, CallMixin, EmitMixin, StoreMixin):
    def __init__(self, owner, point, args):
        self.owner = owner
        self.backend = owner.backend
        self.point = point
        cont = point.cont
        self.ambient = cont.ambient
        self.tracer = Tracer(self, owner.decomps)
        self.sources: dict = {}
        self.keep: list = []
        self.entry = GuardSet(0)  # checked before the unit runs
        self.pending = GuardSet(1)  # checked before the next emitted statement (after a break)
        self.entry.state()
        self.impure = False  # has a statement that may change outside state run in Python?
        self.sizes_seen = False
        self.fallback_seen = False
        self.router = _Router(self)
        self.init_stores()
        self.region = None
        self.regions = []
        self.breaks: list[BreakInfo] = []
        self.mid_guards: list = []
        self.state_dirty = False
        self.depth = 0
        self.nested = 0
        self.prefixes = {}
        self.head = None
        self.head_visits = 0
        self.last_break_line = 0
        root = owner.info
        self.prog = Program(list(cont.labels), root.globals, Ambient.current(), reserved=set(root.locals))
        self.render_ctx = RenderCtx(self, "mid")
        frames, self.cont, slot_values = resume.decode(self, cont, args)
        self.prefixes = {f.prefix for f in frames}
        self.params = {}
        for label, arg, value in zip(cont.labels, args, slot_values):
            self.prog.rt[label] = arg
            self.prog.set_home(label, value)
            self.params[label] = value
        if cont.loop_head:
            self.head = self.cont[-1]
            self.prog.loop_header = True
        self.resume_state = resume.encode(self, self.cont, cont.loop_head)
        self.entry_state = self.resume_state
        self.cur_frame = frames[0] if frames else None

    # -- small services for the mixins --
    def guards_now(self):
        return self.router

    def group_for(self, source) -> GuardSet:
        """Reads of outside state are valid from entry until Python code that may change it runs;
        values produced in Python are checked after they exist."""
        root = source.root() if source is not None else None
        if root is None or isinstance(root, VarSource) or self.impure:
            return self.pending
        return self.entry

    def use_meta(self, tv):
        if tv.pending_guard:
            tv.pending_guard = False
            entry = self.tracer.reals.get(id(tv))
            label = tv.source.describe() if tv.source is not None else "tensor"
            group = self.group_for(tv.source)
            dims = ()
            if group is self.entry and self.point.root and isinstance(tv.source.root(), ArgSource):
                dims = self.owner.dynamic_dims(entry[0])
                tv.dyn = bool(dims)
            group.tensor(tv, entry[0], label, dims)

    def observe(self, tv):
        """Python saw sizes of `tv`: with dynamic=True, this unit then holds for these sizes only."""
        if tv.dyn:
            self.sizes_seen = True

    def guard_alias(self, tv, source):
        self.guards_now().alias(lambda c: c.tensor_expr(tv), source, tv.source.describe())

    def frame_prefix(self, info):
        base = f"_{info.name.strip('<>')}"
        k = 1
        while f"{base}{k}_" in self.prefixes:
            k += 1
        self.prefixes.add(f"{base}{k}_")
        return f"{base}{k}_"

    def current_frame(self):
        return self.cur_frame

    def frames_in(self, entries):
        seen, out = set(), []

        def add(f):
            if f is not None and id(f) not in seen:
                if f.closure is not None:
                    add(f.closure)
                seen.add(id(f))
                out.append(f)
        for e in entries:
            add(e.frame)
            if type(e) is Call:
                add(e.callee)
        for f in list(out):
            for v in f.env.values():
                if type(v) is Closure:
                    add(v.frame)
        return out

    def live_values(self, keep=()) -> dict:
        out = {}
        stack = list(keep) + self.store_values()
        for f in self.frames_in(self.cont):
            stack.extend(f.env.values())
        for e in self.cont:
            if type(e) is Loop and e.items:
                stack.extend(e.items)
        while stack:
            v = stack.pop()
            t = type(v)
            if t in (TVar, Ext):
                out[id(v)] = v
            elif t in (list, tuple, set) or (isinstance(v, tuple) and not constant_like(v)):
                if id(v) not in out:
                    out[id(v)] = v
                    stack.extend(v)
            elif t is dict:
                if id(v) not in out:
                    out[id(v)] = v
                    stack.extend(v.keys())
                    stack.extend(v.values())
            elif t is Closure:
                stack.extend(v.defaults)
                stack.extend(v.kwdefaults.values())
        return out

    def substitute(self, mapping):
        """Replace values (by id) everywhere the interpreter holds them."""
        def sub(v, seen):
            r = mapping.get(id(v))
            if r is not None:
                return r
            t = type(v)
            if t is list and id(v) not in seen:
                seen.add(id(v))
                v[:] = [sub(x, seen) for x in v]
            elif t is dict and id(v) not in seen:
                seen.add(id(v))
                for k in list(v):
                    v[k] = sub(v[k], seen)
            elif t is tuple:
                return tuple(sub(x, seen) for x in v)
            return v
        seen = set()
        for f in self.frames_in(self.cont):
            for k in list(f.env):
                f.env[k] = sub(f.env[k], seen)
        for e in self.cont:
            if type(e) is Loop and e.items:
                e.items[:] = [sub(x, seen) for x in e.items]

    def before_mutation(self, container):
        tx = self.tx
        if tx is not None and id(container) not in tx["saved"]:
            tx["saved"][id(container)] = (container, container.copy())

    def snapshot(self, entries=None, loop_head=False):
        return resume.encode(self, self.cont if entries is None else entries, loop_head)

    # -- statement transactions --
    tx = None

    def begin(self, frame):
        r = self.region
        return {"env": dict(frame.env), "frame": frame, "saved": {}, "region": r,
                "log": r.log_mark() if r else None, "cont": list(self.cont), "depth": self.depth,
                "stores": len(self.stores),
                "guards": (self.entry, self.entry.mark(), self.pending, self.pending.mark()), "sources": []}

    def rollback(self, tx):
        tx["frame"].env.clear()
        tx["frame"].env.update(tx["env"])
        for obj, copy in tx["saved"].values():
            if type(obj) is list:
                obj[:] = copy
            else:
                obj.clear()
                obj.update(copy)
        r = self.region
        if r is not None:
            if r is tx["region"]:
                r.rollback(tx["log"])
            else:  # the region was opened by this statement
                self.region = None
        self.cont[:] = tx["cont"]  # a `return` may have unwound entries before breaking
        self.rollback_stores(tx["stores"])
        self.depth = tx["depth"]
        for key in tx["sources"]:
            del self.sources[key]
        entry, emark, pending, pmark = tx["guards"]
        entry.rollback(emark)
        if pending is self.pending:
            pending.rollback(pmark)

    # -- the main loop --
    def run(self):
        """Capture and run this unit; returns the function's result or a Jump."""
        return self.drive(self.cont, nested=False)

    def drive(self, cont, nested):
        while True:
            if not cont:  # the function body ended without `return`
                return self.finish(None)
            top = cont[-1]
            t = type(top)
            if t is Block:
                if top.i < len(top.stmts):
                    stmt = top.stmts[top.i]
                    top.i += 1
                    out = self.step(stmt, top.frame, nested)
                    if out is not None:
                        return out
                else:
                    cont.pop()
            elif t is Loop:
                out = self.loop_next(top, nested)
                if out is not None:
                    return out
            elif t is With:
                cont.pop()
                self.set_ambient(top.saved)
            else:  # Call: the callee ended without `return`
                out = self.do_return(top.callee, None, nested)
                if out is not None:
                    return out

    def step(self, stmt, frame, nested):
        self.cur_frame = frame
        self.tracer.loc = Loc(frame.info.filename, stmt.lineno, stmt.col_offset, frame.info.name,
                              frame.info.source_line(stmt.lineno))
        handler = _STMTS.get(type(stmt), Capture.s_unsupported)
        if nested:
            try:
                return handler(self, stmt, frame, nested)
            except Break as b:
                # report the break in the innermost user function (not inside torch's own code)
                if b.info is None or (_library(b.info) and not _library(frame.info)):
                    b.node = b.node if b.node is not None and b.info is None else stmt
                    b.info = frame.info
                raise
            except (CaptureError, Raised):
                raise
            except Exception as e:  # noqa: BLE001 - Python raises here; the outer statement runs in Python
                raise Break(f"raises {type(e).__name__}", None, stmt) from None
        tx = self.begin(frame)
        self.tx = tx
        try:
            return handler(self, stmt, frame, nested)
        except Break as b:
            self.rollback(tx)
            self.tx = None
            if b.info is not None and _library(b.info) and not _library(frame.info):
                b.node, b.info = stmt, None  # inside torch's own code: report the user's statement
            return self.on_break(stmt, frame, b)
        except (CaptureError, Raised):
            raise
        except Exception as e:  # noqa: BLE001 - Python raises here: run the statement in Python
            self.rollback(tx)
            self.tx = None
            return self.on_break(stmt, frame, Break(f"raises {type(e).__name__}: {e}", None, stmt))
        finally:
            self.tx = None

    def on_break(self, stmt, frame, b):
        t = type(stmt)
        if t is ast.Return and stmt.value is not None:
            self.fallback(stmt, frame, b, result_var="__fl_ret", expr=stmt.value)
            return self.do_return(frame, frame.env.pop("__fl_ret"), False)
        if t is ast.If:
            self.fallback(stmt, frame, b, result_var="__fl_cond", expr=stmt.test)
            return self.branch(stmt, frame, frame.env.pop("__fl_cond"))
        if t is ast.For and not _escapes_loop(stmt):
            self.fallback(stmt, frame, b, result_var="__fl_iter", expr=stmt.iter)
            it = frame.env.pop("__fl_iter")
            value = it.value if type(it) is Ext else it
            if type(value) not in (list, tuple):
                if not isinstance(value, _FINITE_ITERABLES):
                    raise CaptureError(f"line {stmt.lineno}: cannot iterate over {type(value).__name__} "
                                       "produced in Python")
                var = frame.var("__fl_iter")  # iterating these has no side effects: take the items
                self.emit_line("stmt", f"{var} = list({var})", f"line {stmt.lineno}: the loop's items")
                it = self.import_result(self.prog.rt[var], var, "loop items")
            self.cont.append(Loop(frame, stmt, self.iterate(it)))
            return None
        if t is ast.While:
            raise CaptureError("while header broke outside a loop head")
        if t in (ast.For, ast.With) and _escapes_loop(stmt):
            raise CaptureError(f"line {stmt.lineno}: a statement that must run in Python contains "
                               "break/continue/return")
        self.fallback(stmt, frame, b)
        return None

    # -- statements --
    def s_expr(self, stmt, frame, nested):
        if type(stmt.value) is ast.Call and not nested:
            return self.call_statement(stmt.value, frame, "expr")
        self.ev(stmt.value, frame)

    def s_assign(self, stmt, frame, nested):
        if type(stmt.value) is ast.Call and not nested and len(stmt.targets) == 1 and \
                _simple_target(stmt.targets[0]):
            return self.call_statement(stmt.value, frame, stmt.targets[0])
        value = self.ev(stmt.value, frame)
        for target in stmt.targets:
            self.assign_target(target, value, frame)

    def s_annassign(self, stmt, frame, nested):
        if stmt.value is not None:
            self.assign_target(stmt.target, self.ev(stmt.value, frame), frame)

    def s_augassign(self, stmt, frame, nested):
        op = INPLACE_BINOPS[type(stmt.op).__name__]
        target = stmt.target
        if type(target) is ast.Name:
            self.store(target.id, self.binop(op, self.load(target.id, frame, target), self.ev(stmt.value, frame)),
                       frame)
        elif type(target) is ast.Subscript:
            obj, key = self.ev(target.value, frame), self.ev(target.slice, frame)
            cur = self.getitem_(obj, key)
            if type(cur) in (list, dict, set):
                self.before_mutation(cur)
            self.setitem_(obj, key, self.binop(op, cur, self.ev(stmt.value, frame)), target)
        else:
            obj = self.ev(target.value, frame)
            self.setattr_(obj, target.attr, self.binop(op, self.getattr_(obj, target.attr),
                                                       self.ev(stmt.value, frame)), target)

    def s_return(self, stmt, frame, nested):
        if type(stmt.value) is ast.Call and not nested:
            return self.call_statement(stmt.value, frame, "return")
        value = None if stmt.value is None else self.ev(stmt.value, frame)
        return self.do_return(frame, value, nested)

    def s_pass(self, stmt, frame, nested):
        return None

    def s_if(self, stmt, frame, nested):
        test = self.ev(stmt.test, frame)
        if not nested and (type(test) is TVar or (type(test) is Ext and isinstance(test.source, VarSource))):
            return self.branch(stmt, frame, test)
        self.cont.append(Block(frame, stmt.body if self.truth(test) else stmt.orelse))

    def s_for(self, stmt, frame, nested):
        items = self.iterate(self.ev(stmt.iter, frame))
        self.cont.append(Loop(frame, stmt, items))

    def s_while(self, stmt, frame, nested):
        self.cont.append(Loop(frame, stmt, None))

    def s_break(self, stmt, frame, nested):
        if self.probing:
            raise _EndProbe
        self.unwind_loop(frame, exit_loop=True)

    def s_continue(self, stmt, frame, nested):
        if self.probing:
            raise _EndProbe
        self.unwind_loop(frame, exit_loop=False)

    def s_try(self, stmt, frame, nested):
        """A try statement runs in Python (an exception a region raises at run time must reach its
        handler); report the break its body would make, where the body makes it."""
        reason = "`try` statement runs in Python"
        probe = None if nested else self.probe(stmt.body, frame)
        if probe is None:
            raise Break(reason, None, stmt)
        b = Break(f"{reason} ({probe.reason})", probe.rule, probe.node)
        b.info = probe.info
        raise b

    probing = False

    def probe(self, body, frame):
        """The break `body` would hit first, found by interpreting it; nothing it does is kept
        (the enclosing statement is rolled back)."""
        saved = self.cont
        self.cont = saved + [Call(None, frame, "nested", None), Block(frame, body)]
        self.nested += 1
        self.probing = True
        try:
            self.drive(self.cont, nested=True)
            return None
        except Break as b:
            return b
        except Exception:  # noqa: BLE001 - _EndProbe, or Python would raise: no break to report
            return None
        finally:
            self.cont = saved
            self.nested -= 1
            self.probing = False

    def s_assert(self, stmt, frame, nested):
        test = self.ev(stmt.test, frame)
        if type(test) is TVar:
            raise Break("assert on a tensor value", "FL101", stmt.test)
        if not self.truth(test):
            raise AssertionError("assertion failed")  # the statement then runs in Python and raises

    def s_delete(self, stmt, frame, nested):
        for target in stmt.targets:
            if type(target) is ast.Name:
                if target.id not in frame.env:
                    raise NameError(target.id)
                del frame.env[target.id]
            elif type(target) is ast.Subscript:
                obj = self.ev(target.value, frame)
                if type(obj) not in (list, dict):
                    raise Break("del on an object from outside the function", None, target)
                self.before_mutation(obj)
                del obj[self.hashable(self.ev(target.slice, frame))]
            else:
                raise Break("del of an attribute", None, target)

    def s_with(self, stmt, frame, nested):
        states = []
        ambient = self.ambient
        for item in stmt.items:
            if item.optional_vars is not None:
                raise Break("`with ... as` runs in Python", None, item.context_expr)
            ambient = self.context_ambient(item.context_expr, frame, ambient)
            states.append(ambient)
        saved = self.ambient
        if not nested:
            self.flush()
        for i, state in enumerate(states):
            self.cont.append(With(frame, saved if i == 0 else states[i - 1]))
        self.set_ambient(states[-1], flush=False)
        self.cont.append(Block(frame, stmt.body))

    def context_ambient(self, expr, frame, ambient):
        if type(expr) is not ast.Call:
            raise Break("context manager runs in Python", None, expr)
        func = self.ev(expr.func, frame)
        args, kwargs = self.call_args(expr, frame)
        args, kwargs = [self._plain(a) for a in args], {k: self._plain(v) for k, v in kwargs.items()}
        if func in _GRAD_CONTEXTS and not args and not kwargs:
            return ambient.with_grad(_GRAD_CONTEXTS[func])
        if func is torch.set_grad_enabled and len(args) == 1 and type(args[0]) is bool:
            return ambient.with_grad(args[0])
        if func in _AUTOCASTS:
            device = "cuda" if func is torch.cuda.amp.autocast else "cpu" if func is torch.cpu.amp.autocast \
                else kwargs.pop("device_type", args[0] if args else None)
            dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
            enabled = kwargs.get("enabled", args[2] if len(args) > 2 else True)
            if device not in ("cpu", "cuda") or type(enabled) is not bool:
                raise Break("unsupported autocast arguments", None, expr)
            dtype = dtype or torch.get_autocast_dtype(device)
            return ambient.with_autocast(device, enabled, dtype)
        raise Break("context manager runs in Python", None, expr)

    def s_functiondef(self, stmt, frame, nested):
        if stmt.decorator_list:
            raise Break("decorated nested function", None, stmt)
        frame.env[stmt.name] = self.make_closure(stmt, frame, stmt.name)

    def s_import(self, stmt, frame, nested):
        for alias in stmt.names:
            top = alias.name.split(".")[0]
            if top not in LIBRARY_MODULES or alias.name not in sys.modules:
                raise Break("import runs in Python", None, stmt)
            module = sys.modules[alias.name] if alias.asname else sys.modules[top]
            frame.env[alias.asname or top] = module

    def s_importfrom(self, stmt, frame, nested):
        module = sys.modules.get(stmt.module or "")
        if stmt.level or module is None or stmt.module.split(".")[0] not in LIBRARY_MODULES:
            raise Break("import runs in Python", None, stmt)
        for alias in stmt.names:
            frame.env[alias.asname or alias.name] = getattr(module, alias.name)

    def s_unsupported(self, stmt, frame, nested):
        raise Break(f"`{type(stmt).__name__.lower()}` statement runs in Python", None, stmt)

    # -- calls at statement level (the callee's statements can break individually) --
    def call_statement(self, call, frame, target):
        func = self.ev(call.func, frame)
        args, kwargs = self.call_args(call, frame)
        try:
            callee = self.prepare_inline(func, args, kwargs, call)
            value = self.call(func, args, kwargs, call) if callee is None else None
        except Break as b:
            b.node = b.node if b.node is not None else call
            raise
        if callee is None:
            if target == "expr":
                return None
            if target == "return":
                return self.do_return(frame, value, False)
            self.assign_target(target, value, frame)
            return None
        self.depth += 1
        self.cont.append(Call(frame, callee, target, call))
        if callee.ambient is not None and callee.ambient != self.ambient:
            self.flush()
            self.cont.append(With(callee, self.ambient))
            self.ambient = callee.ambient
        self.cont.append(Block(callee, callee.info.body))
        return None

    def run_nested(self, frame, node):
        """Expression-level inlining: run the callee to completion; any break breaks the caller."""
        if frame.ambient is not None and frame.ambient != self.ambient:
            raise Break(f"{frame.info.qualname} changes grad mode (called inside an expression)", None, node)
        self.depth += 1
        self.nested += 1
        cont = [Call(None, frame, "nested", node), Block(frame, frame.info.body)]
        saved = self.cont
        self.cont = saved + cont
        try:
            return self.drive(self.cont, nested=True)[1]
        finally:
            self.cont = saved
            self.nested -= 1
            self.depth -= 1

    def do_return(self, frame, value, nested):
        """`return value` from `frame`: unwind to its call and deliver the value."""
        cont = self.cont
        while cont and not (type(cont[-1]) is Call and cont[-1].callee is frame):
            e = cont.pop()
            if type(e) is With:
                self.set_ambient(e.saved, flush=not nested)
            if not cont:
                return self.finish(value)
        call = cont.pop()
        if call.target == "nested":
            return ("value", value)
        self.depth -= 1
        if call.target == "return":
            return self.do_return(call.frame, value, nested)
        if call.target != "expr":
            try:
                self.assign_target(call.target, value, call.frame)
            except Exception:
                if not nested:
                    self.flush()  # eager ran everything before the failing assignment
                raise
        return None

    def unwind_loop(self, frame, exit_loop):
        cont = self.cont
        while True:
            e = cont[-1]
            if type(e) is Loop and e.frame is frame:
                if exit_loop:
                    cont.pop()
                return
            cont.pop()
            if type(e) is With:
                self.set_ambient(e.saved)

    def set_ambient(self, state, flush=True):
        if state != self.ambient:
            if flush:
                self.flush()
            self.ambient = state

    # -- loops --
    def loop_next(self, entry, nested):
        node, frame = entry.node, entry.frame
        if entry.items is not None:
            if entry.items:
                item = entry.items.pop(0)
                try:
                    self.assign_target(node.target, item, frame)
                except Break:
                    raise CaptureError(f"line {node.lineno}: loop target cannot be assigned in the trace") from None
                except Exception:
                    if not nested:
                        self.flush()  # eager ran everything before the failing assignment
                    raise
                self.cont.append(Block(frame, node.body))
            else:
                self.cont.pop()
                if node.orelse:
                    self.cont.append(Block(frame, node.orelse))
            return None
        self.tracer.loc = Loc(frame.info.filename, node.lineno, node.col_offset, frame.info.name,
                              frame.info.source_line(node.lineno))
        tx = self.begin(frame)
        self.tx = tx
        try:
            test = self.ev(node.test, frame)
            dynamic = type(test) is TVar or (type(test) is Ext and isinstance(test.source, VarSource))
            go = dynamic or self.truth(test)
        except Break as b:
            if nested:
                raise
            test, dynamic, go = b, True, True
        except Exception as e:  # noqa: BLE001 - Python raises here: evaluate the test in Python
            if nested:
                raise Break(f"raises {type(e).__name__}", None, node.test) from None
            test, dynamic, go = Break(f"raises {type(e).__name__}: {e}", None, node.test), True, True
        finally:
            self.tx = None
        if not dynamic:
            if go:
                self.cont.append(Block(frame, node.body))
            else:
                self.cont.pop()
                if node.orelse:
                    self.cont.append(Block(frame, node.orelse))
            return None
        if nested:
            raise Break("data-dependent loop condition", "FL101", node.test)
        if entry is not self.head or self.head_visits:
            # continue in a unit that starts at this loop head (or loop back to this one)
            self.rollback(tx)
            self.head_visits += 1
            if entry is self.head:
                return self.back_edge()
            self.flush()
            return self.jump(self.snapshot(loop_head=True))
        self.head_visits += 1
        if isinstance(test, Break):
            self.rollback(tx)
            self.cont.append(Block(frame, [node]))  # the test runs in Python as if it were a statement
            self.fallback(node, frame, test, result_var="__fl_cond", expr=node.test)
            self.cont.pop()
            test = frame.env.pop("__fl_cond")
        return self.branch(node, frame, test, loop=entry)

    def back_edge(self):
        self.flush()
        now = self.snapshot(loop_head=True)
        entry = self.entry_state
        if now.cont.key() != entry.cont.key():
            return self.jump(now)
        params = self.prog.params
        if params:
            self.emit_line("assign", f"{', '.join(params)}{',' if len(params) == 1 else ''} = "
                                     f"{', '.join(now.exprs)}{',' if len(params) == 1 else ''}", "next iteration")
        guard = self.prog.const("__fl_self_guard", self.owner.guard_holder(self))
        jump = f"return __fl_jump({self.prog.const(self.point)}, ({', '.join(params)}{',' if len(params) == 1 else ''}))"
        self.prog.emit("continue", f"if {guard}[0]({', '.join(params)}):\n    continue\n{jump}",
                       "back to the loop head", self.ambient, run=False)
        return Jump(self.point, tuple(self.prog.rt[p] for p in params))

    # -- data-dependent branches --
    def branch(self, stmt, frame, test, loop=None):
        """`if test:` on a run-time value: Python decides; the other side is captured lazily."""
        if type(test) is TVar:  # a branch on a value Python computed is a region boundary, not a break
            self.flush(keep=[test])
            self.record_break(Break("data-dependent branch" if loop is None else "data-dependent loop condition",
                                    "FL101", stmt.test), stmt, frame)
        cond = self.value_expr(test)
        taken = bool(self.prog.execute("pass", self.ambient, cond))
        if loop is None:
            taken_block, other_block = (stmt.body, stmt.orelse) if taken else (stmt.orelse, stmt.body)
            other = self.cont + [Block(frame, other_block)]
            self.cont.append(Block(frame, taken_block))
        else:
            exit_cont = self.cont[:-1] + ([Block(frame, stmt.orelse)] if stmt.orelse else [])
            body_cont = self.cont + [Block(frame, stmt.body)]
            other = exit_cont if taken else body_cont
            if taken:
                self.cont.append(Block(frame, stmt.body))
            else:
                self.cont[:] = exit_cont
        state = self.snapshot(other)
        jump = self.jump_text(state)
        kind = "loop" if loop is not None else "if"
        line = f"if {'not ' if taken else ''}{cond}:\n    {jump}"
        why = "data-dependent {} (FL101)" if type(test) is TVar else "{} on a value computed in Python"
        self.emit_line("if", line, f"line {stmt.lineno}: " + why.format(kind), run=False)
        return None

    def jump(self, state):
        text = self.jump_text(state)
        self.emit_line("jump", text, f"continue at line {state.cont.line()}", run=False)
        return Jump(self.owner.resume_point(state.cont),
                    tuple(self.prog.execute("pass", self.ambient, f"({', '.join(state.exprs)},)")
                          if state.exprs else ()))

    def finish(self, value):
        self.flush(keep=[value])
        expr = self.value_expr(value)
        self.emit_line("return", f"return {expr}", "", run=False)
        return ("return", self.prog.execute("pass", self.ambient, expr))

    # -- breaks --
    def record_break(self, brk, stmt, frame):
        node = brk.node if brk.node is not None else stmt
        info = brk.info or frame.info
        line = getattr(node, "lineno", stmt.lineno)
        self.last_break_line = line
        self.breaks.append(BreakInfo(info.filename, line, getattr(node, "col_offset", 0),
                                     getattr(node, "end_lineno", line), getattr(node, "end_col_offset", 0),
                                     brk.reason, brk.rule, info.qualname, info.source_line(line)))

    def break_comment(self, brk, stmt, frame):
        where = "" if frame.prefix == "" else f" in {frame.info.qualname}"
        rule = f" {brk.rule}" if brk.rule else ""
        return f"line {stmt.lineno}{where}: graph break{rule} ({brk.reason})"


class _Router:
    """`guards_now().kind(source, ...)` adds the check to the group its source belongs to."""

    def __init__(self, cap):
        self.cap = cap

    def __getattr__(self, name):
        cap = self.cap

        def add(*args, **kwargs):
            if name == "state":
                group = cap.pending if cap.impure else cap.entry
            elif name == "not_global":
                group = cap.group_for(None) if cap.impure else cap.entry
            else:
                group = cap.group_for(args[0] if not callable(args[0]) else args[1])
            return getattr(group, name)(*args, **kwargs)
        return add


class RenderCtx:
    """How sources and values are spelled in guard code ('entry': the guard function's parameters;
    'mid': inside the unit, where parameters are read through their prologue aliases)."""

    def __init__(self, cap, mode):
        self.cap = cap
        self.mode = mode

    def arg(self, name):
        prog = self.cap.prog
        if self.mode == "entry" or (name in prog.holder and prog.holder[name] is self.cap.params.get(name)):
            return name
        alias = f"__fl_a_{name}"
        if alias not in prog.rt:
            prog.rt[alias] = prog.rt[name]
            prog.aliases.append((alias, name))
        return alias

    def globals_ref(self, g):
        return self.cap.prog.const(g)

    def global_expr(self, g, name):
        prog = self.cap.prog
        if g is prog.user_globals and name not in prog.reserved and name not in prog.rt \
                and not name.startswith("__fl") and name.isidentifier():
            return name  # the unit runs in the same globals
        return f"{prog.const(g)}[{name!r}]"

    def const(self, obj):
        return self.cap.prog.const(obj)

    def literal(self, v):
        return self.cap.prog.literal(v)

    def helper(self, name):
        return f"__fl_{name}"

    def home_of(self, value):
        return self.cap.prog.home_of(value)

    def tensor_expr(self, tv):
        if self.mode == "mid":
            var = self.cap.prog.home.get(id(tv))
            if var is not None:
                return var
        return tv.source.render(self)


class _EndProbe(Exception):
    pass


def _library(info) -> bool:
    from .interp import is_library_module
    return is_library_module(info.globals)


def _simple_target(t) -> bool:
    if type(t) is ast.Name:
        return True
    return type(t) in (ast.Tuple, ast.List) and all(type(e) is ast.Name for e in t.elts)


def _escapes_loop(stmt) -> bool:
    from .frames import _escapes
    return _escapes(stmt.body) or _escapes(stmt.orelse) if type(stmt) is ast.For else _escapes([stmt])


_STMTS = {
    ast.Expr: Capture.s_expr, ast.Assign: Capture.s_assign, ast.AnnAssign: Capture.s_annassign,
    ast.AugAssign: Capture.s_augassign, ast.Return: Capture.s_return, ast.Pass: Capture.s_pass,
    ast.If: Capture.s_if, ast.For: Capture.s_for, ast.While: Capture.s_while, ast.Break: Capture.s_break,
    ast.Continue: Capture.s_continue, ast.Assert: Capture.s_assert, ast.Delete: Capture.s_delete,
    ast.With: Capture.s_with, ast.FunctionDef: Capture.s_functiondef, ast.Import: Capture.s_import,
    ast.Try: Capture.s_try,
    ast.ImportFrom: Capture.s_importfrom,
}

