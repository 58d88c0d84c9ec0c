"""The capture: run one unit of the function (from its start or a resume point) on real inputs,
interpreting statements, recording regions, and emitting + running the transformed program."""
from __future__ import annotations

import ast

from . import resume
from .ambient import Ambient
from .calls import CallMixin
from .control import ControlMixin
from .emit import CaptureError, EmitMixin
from .frames import Block, Call, GenLoop, Loc, Loop, With, Yielded, _escapes
from .guards import GuardSet, constant_like
from .hoist import SwitchesGradMode, hoisted
from .interp import ExprMixin
from .program import Program, Raised
from .statements import _STMTS, StatementMixin, _EndProbe, _escapes_loop
from .stores import StoreMixin
from .tensors import Tracer
from .values import ArgSource, Break, Closure, Ext, TVar, VarSource


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


# iterating these has no side effects, so a loop over one made in Python can take its items first
_FINITE_ITERABLES = (zip, enumerate, reversed, range, set, frozenset, str, type({}.keys()), type({}.values()),
                     type({}.items()), type(reversed([])), type(iter([])), type(iter(())))


class Capture(ExprMixin, CallMixin, StatementMixin, ControlMixin, EmitMixin, StoreMixin):
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

    def nothing_done(self) -> bool:
        """No statement has run in Python and no region has changed state so far (random draws
        may have: the caller restores the random state)."""
        return all(line.kind not in ("stmt", "store") for line in self.prog.lines) and not any(
            r.changes_state() for r in self.regions)

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
            elif t in resume.SEQUENCE_ITERATORS:  # `w_iter = iter(ws.unbind(1))` kept across a break
                stack.extend(resume.items_left(v))
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
            elif t is Yielded:  # the loop body ran for one item: the generator goes on
                cont.pop()
            elif t is GenLoop:  # the generator returned
                cont.pop()
                if top.node.orelse:
                    cont.append(Block(top.frame, top.node.orelse))
            else:  # Call: the callee ended without `return`
                out = self.do_return(top.callee, None, nested)
                if out is not None:
                    return out

    def step(self, stmt, frame, nested):
        self.cur_frame = frame
        self.locate(frame, stmt)
        handler = _STMTS.get(type(stmt), StatementMixin.s_unsupported)
        if nested:
            try:
                return handler(self, stmt, frame, nested)
            except Break as b:
                # report the break in the innermost user function (not inside torch's own code)
                if b.info is None or (_library(b.info) and not _library(frame.info)):
                    b.node = b.node if b.node is not None and b.info is None else stmt
                    b.info = frame.info
                raise
            except (CaptureError, Raised, _EndProbe):
                raise
            except Exception as e:  # noqa: BLE001 - Python raises here; the outer statement runs in Python
                b = Break(f"raises {type(e).__name__}", None, stmt)
                b.info = frame.info  # callers report it at their own statement when this is library code
                raise b from None
        tx = self.begin(frame)
        self.tx = tx
        try:
            return handler(self, stmt, frame, nested)
        except Break as b:
            self.rollback(tx)
            self.tx = None
            split = hoisted(stmt, b.node, frame.info) if type(b) is SwitchesGradMode else None
            if split is not None:  # the call becomes a statement, where regions can switch grad mode
                self.cont.append(Block(frame, split))
                return None
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

    def locate(self, frame, node):
        """Ops record the position of the statement that runs them; inside library code (an
        nn.Linear's forward, F.* helpers) called from user code they keep the user's line, the
        one the editor links kernels to."""
        library = _library(frame.info)
        loc = self.tracer.loc
        if library and loc is not None and not loc.library:
            return
        self.tracer.loc = Loc(frame.info.filename, node.lineno, node.col_offset, frame.info.name,
                              frame.info.source_line(node.lineno), library)

    def on_break(self, stmt, frame, b):
        t = type(stmt)
        if t is ast.Return and stmt.value is not None:
            self.fallback(stmt, frame, b, result_var="__fl_ret", expr=stmt.value)
            return self.do_return(frame, frame.env.pop("__fl_ret"), False)
        if t is ast.Expr and type(stmt.value) is ast.Yield:  # the value is made in Python
            self.fallback(stmt, frame, b, result_var="__fl_yield", expr=stmt.value.value)
            return self.do_yield(frame, frame.env.pop("__fl_yield"))
        if t is ast.If:
            self.fallback(stmt, frame, b, result_var="__fl_cond", expr=stmt.test)
            return self.branch(stmt, frame, frame.env.pop("__fl_cond"))
        if t is ast.For:  # the iterable is made in Python; the loop itself is interpreted
            # a variable per loop: values taken from its items are re-read through it later
            items = self.prog.fresh("__fl_iter")
            self.fallback(stmt, frame, b, result_var=items, expr=stmt.iter)
            it = frame.env.pop(items)
            value = it.value if type(it) is Ext else it
            if type(value) not in (list, tuple):
                if not isinstance(value, _FINITE_ITERABLES):
                    # iterating it runs code we cannot see (a generator, a container's own
                    # __iter__): it may draw random numbers or read state between the loop body's
                    # steps, so taking its items up front could change the result. The loop runs in
                    # Python, over the iterable just made.
                    if _escapes([stmt]):
                        raise CaptureError(f"line {stmt.lineno}: cannot iterate over {type(value).__name__} "
                                           "produced in Python (a return inside the loop)")
                    loop = ast.copy_location(ast.For(stmt.target, ast.Name(frame.var(items), ast.Load()),
                                                     stmt.body, stmt.orelse), stmt)
                    self.fallback(stmt, frame, Break(f"loop over a {type(value).__name__} runs in Python",
                                                     None, stmt.iter), expr=loop)
                    return None
                var = frame.var(items)  # iterating these has no side effects: take the items
                self.emit_line("stmt", f"{var} = list({var})", f"line {stmt.lineno}: the loop's items")
                it = self.import_result(self.prog.rt[var], var, "loop items")
            self.cont.append(Loop(frame, stmt, self.iterate(it)))
            # guards on the items fail over to the loop's start (the snapshot after the fallback
            # points past the whole loop)
            self.resume_state = self.snapshot()
            return None
        if t is ast.While:
            raise CaptureError("while header broke outside a loop head")
        if t is ast.With and _escapes_loop(stmt) and not hasattr(stmt, "fl_exit"):
            raise CaptureError(f"line {stmt.lineno}: a statement that must run in Python contains "
                               "break/continue/return")
        self.fallback(stmt, frame, b)
        return None

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


def _library(info) -> bool:
    from .objects import is_library_module
    return is_library_module(info.globals)


