"""From interpreter state to program statements: regions, fallbacks, guards and jumps.

Invariant at every emitted statement: each live run-time value (tensor or outside value) either
has a home variable in the program or is re-readable from its source in the current epoch. A
statement that ran in Python starts a new epoch: external state may have changed, so later reads
are guarded again before the next emitted statement, bailing out to a resume point on failure.
"""
from __future__ import annotations

import ast
import types

import torch

from .guards import GuardSet, constant_like
from .program import builtin_shadowed
from .frames import _runs_in_python
from .values import UNBOUND, Closure, Ext, TVar, VarSource, is_unbound

PURE_RULES = {"FL101", "FL102", "FL103", "FL104", "FL105", "FL110", "FL111", "FL112", "FL114", "FL143"}


class CaptureError(RuntimeError):
    """The capture reached a state it cannot express (reported, never silently wrong)."""


class EmitMixin:
    # -- regions --
    def open_region(self):
        if self.region is None:
            from .region import Region
            self.region = Region(len(self.regions), self.ambient)
            if self.state_dirty:
                self.guards_now().state()
                self.state_dirty = False
        return self.region

    def flush(self, keep=()):
        """Close the open region (compile it, emit its call, give its live outputs homes), then
        replay the stores it made to outside objects."""
        self.flush_region(keep)
        if self.stores:
            self.emit_stores()

    def flush_region(self, keep):
        r = self.region
        if r is None:
            return
        self.region = None
        live = self.live_values(keep)
        outs = [tv for tv in r.created.values() if id(tv) in live]
        if not outs and not r.has_effects():
            return
        r.finish(outs)
        r.dynamic = any(type(v) is TVar and v.dyn for v in r.inputs)
        frames = self.frames_in(self.cont)
        r.create_graph_line = next((f.info.create_graph_line for f in frames if f.info.create_graph_line), None)
        r.file_create_graph_line = next((f.info.file_create_graph_line for f in frames
                                         if f.info.file_create_graph_line), None)
        self.regions.append(r)
        names = [self.out_name(tv, live) for tv in outs]
        out_ids = {id(tv) for tv in outs}
        self.assign([(self.prog.fresh("__t"), self.prog.holder[n]) for n in names
                     if n in self.prog.holder and id(self.prog.holder[n]) in live
                     and id(self.prog.holder[n]) not in out_ids], snap=False)  # keep what outputs overwrite
        arg_exprs = [self.value_expr(tv) for tv in r.inputs]
        examples = self.prog.execute("pass", r.ambient, f"({', '.join(arg_exprs)}{',' if len(arg_exprs) == 1 else ''})") \
            if arg_exprs else ()
        self.backend.compile_region(r, list(examples))
        name = self.prog.const(f"__fl_r{self.owner.next_region_id()}", r.run)
        r.name = name
        lhs = ", ".join(names) + ("," if len(names) == 1 else "")
        call = f"{name}({', '.join(arg_exprs)})"
        text = f"{lhs} = {call}" if names else call
        self.emit_line("region", text, self.region_comment(r), homes=list(zip(names, outs)))

    def region_comment(self, r):
        """`region 3: lines 10-14, 9 ops` (lines of this function's file; ops of code it calls in
        other files are counted too)."""
        here = self.owner.info.filename
        lines = sorted({ln for f, ln in r.lines if f == here})
        span = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}" if lines else \
            "code in other files"
        return f"region {r.index}: {span}, {len(r.ops)} ops"

    def out_name(self, tv, live):
        """The variable of a name bound to `tv` (its current value is moved if still needed)."""
        for frame in reversed(self.frames_in(self.cont)):
            for name, v in frame.env.items():
                if v is tv:
                    return frame.var(name)
        return self.prog.fresh("__t")

    # -- expressions for values --
    def value_expr(self, v, memo=None) -> str:
        t = type(v)
        if t is TVar or t is Ext:
            var = self.prog.home.get(id(v))
            if var is not None:
                return var
            if v.source is not None and not isinstance(v.source, VarSource):
                return v.source.render(self.render_ctx)
            raise CaptureError("a value computed in the trace has no home variable")
        if constant_like(v):
            return self.prog.literal(v)
        if t in (list, tuple, set, dict):
            var = self.prog.home.get(id(v))
            if var is not None:
                return var
            if t is dict:
                return "{" + ", ".join(f"{self.value_expr(k)}: {self.value_expr(x)}" for k, x in v.items()) + "}"
            inner = ", ".join(self.value_expr(x) for x in v)
            if t is tuple:
                return f"({inner},)" if len(v) == 1 else f"({inner})"
            return f"[{inner}]" if t is list else (f"{{{inner}}}" if v else "set()")
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            return f"{self.prog.const(type(v))}(*({', '.join(self.value_expr(x) for x in v)},))"
        if isinstance(v, tuple):  # torch.return_types
            return f"{self.prog.const(type(v))}(({', '.join(self.value_expr(x) for x in v)},))"
        if t is Closure:
            return self.prog.home_of(v)  # defined by define_closure before any use
        if isinstance(v, (types.GeneratorType,)) or type(v).__name__.endswith("iterator"):
            raise CaptureError("an iterator crosses a statement that runs in Python")
        return self.prog.const(v)

    # -- homes before a statement runs in Python --
    def materialize(self, frame, reads, writes):
        """Give program variables `frame.var(n)` the interpreter's values of `reads`; keep every
        other live value reachable when `writes` are overwritten; home all outside values."""
        prog = self.prog
        for n in reads:
            for c in _containers(frame.env.get(n), closures=True):
                if type(c) is Closure and id(c) not in prog.home:
                    self.define_closure(c)
        live = self.live_values()
        needed = {frame.var(n): frame.env[n] for n in reads if n in frame.env}
        # outside values read before this statement must not be re-read after it
        self.assign([(prog.fresh("__e"), v) for v in live.values()
                     if type(v) in (TVar, Ext) and id(v) not in prog.home and v.source is not None])
        written = {frame.var(n): n for n in writes}
        rescue = []
        for var in sorted(set(needed) | set(written)):
            held = prog.holder.get(var)
            if held is None or id(held) not in live:
                continue
            # `x = f(x)` after `x = src`: the statement rebinds x, but src still needs the old value
            if needed.get(var) is not held or (var in written and self.live_elsewhere(held, frame, written[var])):
                rescue.append((prog.fresh("__t"), held))
        self.assign(rescue)
        shared, seen = [], set()
        for value in needed.values():
            for c in _containers(value):
                if id(c) in seen and id(c) not in prog.home:
                    shared.append((prog.fresh("__v"), c))
                seen.add(id(c))
        self.assign(shared)
        self.assign([(var, value) for var, value in needed.items()
                     if var not in prog.holder or prog.holder[var] is not value])

    def live_elsewhere(self, value, frame, name) -> bool:
        """Is `value` reachable other than through `frame`'s variable `name`?"""
        env = dict(frame.env)
        del frame.env[name]
        try:
            return id(value) in self.live_values()
        finally:
            frame.env.clear()
            frame.env.update(env)

    def define_closure(self, c):
        """Python code about to run needs an interpreted lambda/def: define it in the program,
        over program variables holding the names it reads from its defining function."""
        from .frames import closure_info
        own = closure_info(c).locals
        free = {n.id for n in ast.walk(c.node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                and n.id not in own and n.id in c.frame.info.locals}
        self.materialize(c.frame, free, set())
        var = self.prog.fresh("__fn")
        node = _copy(c.node)
        node.args.defaults, node.args.kw_defaults = [], [None] * len(node.args.kwonlyargs)
        if isinstance(node, ast.Lambda):
            text = f"{var} = {self.render_stmt(node, c.frame)}"
        else:
            node.name = var
            text = self.render_stmt(node, c.frame)
        if c.defaults:
            text += f"\n{var}.__defaults__ = ({', '.join(self.value_expr(d) for d in c.defaults)},)"
        if c.kwdefaults:
            text += f"\n{var}.__kwdefaults__ = {self.value_expr(dict(c.kwdefaults))}"
        self.emit_line("assign", text, f"{c.name} from line {c.node.lineno}", homes=[(var, c)])

    def assign(self, pairs, snap=True):
        if not pairs:
            return
        lhs = ", ".join(var for var, _ in pairs)
        rhs = ", ".join(self.value_expr(v) for _, v in pairs)
        self.emit_line("assign", f"{lhs} = {rhs}", "", homes=pairs, snap=snap)

    # -- statements that run in Python --
    def fallback(self, stmt, frame, brk, result_var=None, expr=None):
        """Run `stmt` (or `result_var = expr`) in Python between regions. While the statement has
        not run, the continuation points at it (a guard failing before it resumes there)."""
        block = self.cont[-1]
        block.i -= 1
        self.flush()
        node = expr if expr is not None else stmt
        reads, writes = names_of(node, frame.info.locals)
        if result_var is not None:
            writes = writes | {result_var}
        self.materialize(frame, reads, writes)
        text = self.render_stmt(node, frame)
        if result_var is not None:
            text = f"{frame.var(result_var)} = {text}"
        exit_var = getattr(node, "fl_exit", None)
        if exit_var is not None:  # it leaves through `break` (escapes.py)
            body = "\n".join("    " + ln for ln in (text + "\nbreak").splitlines())
            text = f"{frame.var(exit_var)} = None\nwhile True:\n{body}"
        if _runs_in_python(node):  # its other paths may leave some of these unassigned
            unbound = self.prog.const("__fl_unbound", UNBOUND)
            text += "".join(f"\n{v} = locals().get({v!r}, {unbound})"
                            for v in sorted(frame.var(n) for n in writes if n != exit_var))
        left_unassigned = [n for n in reads if n in frame.env and is_unbound(frame.env[n])]
        for n in left_unassigned:  # by an earlier statement run in Python: checked before it is deleted
            self.guards_now().identity(frame.env[n].source, UNBOUND)
        if left_unassigned:
            self.emit_pending_guards()
        unbound = sorted(frame.var(n) for n in reads if n not in frame.env or is_unbound(frame.env[n]))
        if unbound:  # reading them raises UnboundLocalError, as in the original function
            stale = [v for v in unbound if v in self.prog.rt]
            text = (f"del {', '.join(stale)}\n" if stale else "") + \
                "".join(f"if False:\n    {v} = None\n" for v in unbound if v not in stale) + text
            for v in stale:
                self.prog.forget(v)
        self.record_break(brk, stmt, frame)
        containers = {id(c): c for n in reads if n in frame.env for c in _containers(frame.env[n])}
        self.emit_line("stmt", text, self.break_comment(brk, stmt, frame))
        block.i += 1
        rt = self.prog.rt
        for n in writes:
            var = frame.var(n)
            self.prog.forget(var)
            if var in rt:
                frame.env[n] = self.import_result(rt[var], var, n)
            else:
                frame.env.pop(n, None)
        self.replace_containers(containers)  # the statement may have changed them (`d[k] = ...`)
        self.reimport_resized()
        self.new_epoch(brk.rule in PURE_RULES)

    def import_result(self, value, var, label):
        if isinstance(value, torch.Tensor):
            same = self.live_holding(value)
            if same is not None:  # `x = self.quant(x)` with an identity stub: the very tensor it had
                self.prog.set_home(var, same)
                return same
            tv = self.tracer.new_tvar(self.tracer.fake_mode.from_tensor(value)) \
                if type(value) in (torch.Tensor, torch.nn.Parameter) else None
            if tv is None:
                ext = Ext(value, None)
                ext.source = VarSource(ext, label)
                self.prog.set_home(var, ext)
                return ext
            tv.source = VarSource(tv, label)
            tv.pending_guard = True
            self.tracer.reals[id(tv)] = (value, type(value))
            self.tracer.keep.append(value)
            self.prog.set_home(var, tv)
            return tv
        ext = Ext(value, None)
        ext.source = VarSource(ext, label)
        self.prog.set_home(var, ext)
        return ext

    def live_holding(self, real):
        """The live tensor value whose home variable holds the object `real`, if any, and whose
        metadata it still has."""
        for v, held in self.live_tensors():
            if held is real:
                return v if _same_metadata(v.fake, real) else None
        return None

    def live_tensors(self):
        """(value, the tensor its home variable holds now) for each live tensor value with a home."""
        rt = self.prog.rt
        for v in self.live_values().values():
            var = self.prog.home.get(id(v)) if type(v) is TVar else None
            if var is not None and isinstance(rt.get(var), torch.Tensor):
                yield v, rt[var]

    def reimport_resized(self):
        """A statement run in Python may have changed a live tensor's metadata in place
        (`t.unsqueeze_(0)` in a disabled helper): from here on it is a new value, read from its
        home, so `t.shape` is what the tensor has now."""
        mapping = {}
        for v, real in list(self.live_tensors()):
            if not _same_metadata(v.fake, real):
                var = self.prog.home[id(v)]
                mapping[id(v)] = self.import_result(real, var, var)
        if mapping:
            self.substitute(mapping)

    def replace_containers(self, containers):
        """Containers handed to Python may have changed: continue with the real objects."""
        mapping = {}
        for cid, c in containers.items():
            var = self.prog.home.get(cid)
            if var is not None:
                mapping[cid] = self.import_result(self.prog.rt[var], var, var)
        if mapping:
            self.substitute(mapping)

    def new_epoch(self, pure):
        self.fallback_seen = True
        # Python code ran: a tensor seen before may now sit elsewhere (`path.reverse()` moved the
        # items of a list), so one read from now on is a new import, through the source it is read by
        self.tracer.imported.clear()
        self.resume_state = self.snapshot()
        if not pure:  # Python code ran: outside state, tensor metadata, global state: check again
            self.impure = True
            self.overlay.clear()
            self.state_dirty = True
            for v in self.live_values().values():
                var = self.prog.home.get(id(v))
                if type(v) is TVar and var is not None:
                    self.tracer.reals[id(v)] = (self.prog.rt[var], self.tracer.tensor_class(v))
                    v.pending_guard = True

    # -- emitting lines (with pending guards first) --
    def emit_line(self, kind, text, comment, run=True, homes=(), snap=True):
        """Emit (and run) a statement; `homes` are (var, value) it assigns."""
        self.emit_pending_guards()
        self.prog.emit(kind, text, comment, self.ambient, run)
        for var, value in homes:
            self.prog.set_home(var, value)
        if snap and self.fallback_seen and kind in ("region", "assign", "if"):
            self.resume_state = self.snapshot()  # a later guard failure resumes from here

    def emit_pending_guards(self):
        part = self.pending
        if not part:
            return
        self.pending = GuardSet(part.epoch + 1)
        jump = self.jump_text(self.resume_state)
        cond = part.render(self.render_ctx)
        self.prog.emit("guard", f"if not ({cond}):\n    {jump}", f"checks after line {self.last_break_line}",
                       self.ambient, run=False)
        self.mid_guards.append(part)

    # -- jumps --
    def jump_text(self, state) -> str:
        point = self.owner.resume_point(state.cont)
        exprs = state.exprs
        args = ", ".join(exprs) + ("," if len(exprs) == 1 else "")
        return f"return __fl_jump({self.prog.const(point)}, ({args}))"

    def render_stmt(self, node, frame) -> str:
        """Source of `node` with the frame's locals renamed to program variables, free variables
        read from their cells, and another module's globals read from its dict."""
        info = frame.info
        root_globals = self.prog.user_globals
        prog = self.prog

        class Rename(ast.NodeTransformer):
            def __init__(self):
                self.bound = [set()]

            def visit_Name(self, n):
                if any(n.id in b for b in self.bound):
                    return n
                if n.id in info.locals:
                    return ast.copy_location(ast.Name(frame.var(n.id), n.ctx), n)
                if isinstance(n.ctx, ast.Load):
                    if n.id in info.freevars and info.fn.__closure__ is not None:
                        cell = info.fn.__closure__[info.freevars.index(n.id)]
                        return ast.copy_location(ast.parse(f"{prog.const(cell)}.cell_contents",
                                                           mode="eval").body, n)
                    if info.globals is not root_globals:
                        if n.id in info.globals:
                            expr = f"{prog.const(info.globals)}[{n.id!r}]"
                        elif builtin_shadowed(root_globals, n.id):
                            expr = f"{prog.const(__import__('builtins'))}.{n.id}"
                        else:
                            return n
                        return ast.copy_location(ast.parse(expr, mode="eval").body, n)
                return n

            def visit_Call(self, n):
                self.generic_visit(n)
                if isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args and \
                        "__class__" in info.freevars and info.argnames:  # no __class__ cell here
                    cell = info.fn.__closure__[info.freevars.index("__class__")]
                    n.args = [ast.parse(f"{prog.const(cell)}.cell_contents", mode="eval").body,
                              ast.Name(frame.var(info.argnames[0]), ast.Load())]
                return n

            def _scoped(self, n, names):
                self.bound.append(names)
                self.generic_visit(n)
                self.bound.pop()
                return n

            def visit_Lambda(self, n):
                a = n.args
                return self._scoped(n, {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} |
                                    {x.arg for x in (a.vararg, a.kwarg) if x})

            def visit_FunctionDef(self, n):
                a = n.args
                assigned = {t.id for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
                return self._scoped(n, {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} |
                                    {x.arg for x in (a.vararg, a.kwarg) if x} | assigned)

            def _comp(self, n):
                names = {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
                return self._scoped(n, names)

            visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comp

        tree = Rename().visit(_copy(node))
        return ast.unparse(ast.fix_missing_locations(tree))


def _copy(node):
    import copy
    return copy.deepcopy(node)


def names_of(node, local_names) -> tuple[set, set]:
    """Local names a statement reads and writes (not those bound inside its lambdas/comprehensions)."""
    reads, writes = set(), set()
    scoped = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if isinstance(n, ast.Lambda):
                a = n.args
                scoped |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
            else:
                scoped |= {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in local_names and n.id not in scoped:
            if isinstance(n.ctx, ast.Load):
                reads.add(n.id)
            else:
                writes.add(n.id)
                if isinstance(n.ctx, ast.Del):
                    reads.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in local_names:
            writes.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for alias in n.names:
                name = (alias.asname or alias.name).split(".")[0]
                if name in local_names:
                    writes.add(name)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            reads.add(n.target.id)
    return reads & set(local_names), writes


def _containers(value, closures=False):
    """Containers (and, with `closures`, interpreted functions) reachable from `value`."""
    out, stack, seen = [], [value], set()
    while stack:
        v = stack.pop()
        if type(v) in (list, tuple, dict, set) and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
            stack.extend(v.values() if type(v) is dict else v)
        elif closures and type(v) is Closure and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
            stack.extend(v.defaults)
            stack.extend(v.kwdefaults.values())
    return out


def _same_metadata(fake, real) -> bool:
    """Same shape, dtype and layout: what Python code reads (strides are a back end's choice, and
    may differ from the trace's without anything to fix)."""
    return (fake.layout, fake.shape, fake.dtype) == (real.layout, real.shape, real.dtype)
