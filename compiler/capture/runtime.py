"""Running compiled functions: argument binding, variant caches with guards, resume points,
trampolined jumps, recapture on guard failure and the eager fallback past the variant limit."""
from __future__ import annotations

import inspect
import itertools
import warnings

from .ambient import Ambient
from .backends import Backend, rng_state, set_rng_state
from .emit import CaptureError
from .frames import Unsupported, func_info
from .program import Jump, Raised

CACHE_LIMIT = 8


class Variant:
    """One captured unit: its entry guard, its function and what explain() reports about it."""

    def __init__(self, point, index, guard, fn, source, guard_source, guards, mid_guards, regions, breaks):
        self.point, self.index = point, index
        self.guard, self.fn, self.source, self.guard_source = guard, fn, source, guard_source
        self.guards, self.mid_guards = guards, mid_guards
        self.regions, self.breaks = regions, breaks


class ResumePoint:
    """A place the function can be entered: its start, or after a break / branch / loop head."""

    def __init__(self, owner, cont, name):
        self.owner = owner
        self.cont = cont
        self.name = name
        self.params = list(cont.labels)
        self.variants: list[Variant] = []
        self.exhausted = False
        self.root = False

    def dispatch(self, args):
        for v in self.variants:
            if v.guard(*args):
                return v.fn(*args)
        return self.owner.capture(self, args)

    def why_missed(self, args) -> str:
        """The first failing guard of the most recent variant, in words."""
        if not self.variants:
            return "first call"
        v = self.variants[-1]
        for expr, text in v.guard_checks:
            try:
                ok = eval(expr, v.guard_globals, dict(zip(self.params, args)))
            except Exception:  # noqa: BLE001 - a failing read is a failing guard
                ok = False
            if not ok:
                return f"guard failed: {text}"
        return "guard failed"


def _root_info(fn):
    info = func_info(fn)
    if info.generator:  # calling it makes a generator object: nothing to capture
        raise Unsupported(f"{info.qualname} is a generator")
    return info


class CompiledFunction:
    """`fuselens.compile(fn)`: captures on first call, dispatches on guards afterwards."""

    def __init__(self, fn, backend="eager", fullgraph=False, dynamic=False, bound_self=None):
        from .calls import grad_decorator
        self.grad = grad_decorator(fn)  # @torch.no_grad() on the function itself: capture what it wraps
        if self.grad is not None:
            fn = fn.__wrapped__
        self.fn = fn
        self.info = _root_info(fn)
        self.backend = Backend.get(backend)
        self.decomps = self.backend.decompositions()
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.bound_self = bound_self
        self.points: dict = {}
        self.log: list[str] = []
        self._region_ids = itertools.count()
        self._point_ids = itertools.count()
        self.warned = False
        self.binder = _make_binder(self.info, fn)
        self._defaults = (fn.__defaults__, fn.__kwdefaults__)
        self.root = self._root_point(self.binder.params)

    def _root_point(self, params):
        from .resume import Cont
        env = {p: ("slot", i, i) for i, p in enumerate(params)}
        cont = Cont([(self.info, "", None, env)], [("block", 0, self.info.body, 0)], None, list(params), False)
        point = ResumePoint(self, cont, "root")
        point.root = True
        return point

    # -- calling --
    def __call__(self, *args, **kwargs):
        if self.bound_self is not None:
            args = (self.bound_self, *args)
        if (self.fn.__defaults__, self.fn.__kwdefaults__) != self._defaults:
            self.binder = _make_binder(self.info, self.fn)
            self._defaults = (self.fn.__defaults__, self.fn.__kwdefaults__)
        if self.root.exhausted:
            return self.fn(*args, **kwargs)
        params = self.binder(*args, **kwargs)
        r = self.root.dispatch(params)
        while type(r) is Jump:
            r = r.point.dispatch(r.args)
        return r

    # -- capture --
    def capture(self, point, args):
        from .machine import Capture
        if self.fn.__code__ is not self.info.code:  # the function was redefined in place
            self.info = _root_info(self.fn)
            self.binder = _make_binder(self.info, self.fn)
            self.points.clear()
            self.root.variants.clear()
            self.root.cont = self._root_point(self.binder.params).cont
        if point.root:
            point.cont.ambient = Ambient.current() if self.grad is None else Ambient.current().with_grad(self.grad)
        reason = point.why_missed(args)
        if len(point.variants) >= CACHE_LIMIT:
            return self._over_limit(point, args, reason)
        self.log.append(f"capture {point.name}: {reason}")
        if self.fullgraph:
            from .dryrun import DryCapture
            from .report import FullGraphError
            found = DryCapture(self, point, args).run()
            if found:
                raise FullGraphError(found)
        cap = Capture(self, point, args)
        rng = rng_state() if point.root else None
        try:
            result = cap.run()
        except Raised as r:
            raise r.error.with_traceback(r.error.__traceback__) from None
        except CaptureError as error:
            if not (point.root and cap.nothing_done()):
                raise  # part of the function has run: running it again would repeat that
            return self._run_eagerly(point, args, error, rng)
        self._register(point, cap)
        if type(result) is Jump:
            return result
        return result[1]

    def _run_eagerly(self, point, args, error, rng):
        """The capture met something it cannot express before any statement ran in Python or any
        region changed state: the function runs as it is, from the random state it started with
        (the regions run so far drew from it), as eager would (not cached: the next call tries again)."""
        msg = f"fuselens: {self.info.qualname} could not be captured ({error}); it ran without capture"
        self.log.append(msg)
        if not self.warned:
            warnings.warn(msg, stacklevel=4)
            self.warned = True
        set_rng_state(rng)
        return self.binder.call(self.fn, dict(zip(point.params, args)))

    def _over_limit(self, point, args, reason):
        msg = (f"fuselens: {self.info.qualname} hit the variant limit ({CACHE_LIMIT}) at {point.name}; "
               f"last reason: {reason}. Running it without capture from now on.")
        if not self.warned:
            warnings.warn(msg, stacklevel=4)
            self.warned = True
            self.log.append(msg)
        if point.root:
            point.exhausted = True
            call = dict(zip(point.params, args))
            return self.binder.call(self.fn, call)
        from .machine import Capture
        cap = Capture(self, point, args)  # captured and run, never cached
        try:
            result = cap.run()
        except Raised as r:
            raise r.error.with_traceback(r.error.__traceback__) from None
        return result if type(result) is Jump else result[1]

    def _register(self, point, cap):
        from .machine import RenderCtx
        index = len(point.variants)
        name = f"{self.info.name.strip('<>')}_{point.name}_v{index}"
        if point.root:
            cap.entry.code_is(_ConstSource(self.fn), self.fn)
        if cap.sizes_seen:  # Python read sizes of a dynamic input: guard them all exactly
            cap.entry.tensors = [(tv, real, (), label) for tv, real, _, label in cap.entry.tensors]
        header = [f"transformed from {self.info.qualname} ({self.info.filename}:{self.info.node.lineno})",
                  f"entry point: {point.name}" + (f" (line {point.cont.line()})" if point.name != "root" else "")]
        fn, src = cap.prog.build(name, header)
        ctx = RenderCtx(cap, "entry")
        expr = cap.entry.render(ctx)
        checks = cap.entry.checks(ctx)
        params = ", ".join(point.params)
        guard_src = (f"def __fl_guard({params}):\n    try:\n        return {expr}\n"
                     f"    except Exception:\n        return False\n")
        consts = dict(cap.prog.consts)
        guard = _compile(guard_src, "__fl_guard", consts, cap.prog.user_globals)
        variant = Variant(point, index, guard, fn, src, guard_src, cap.entry.describe(),
                          [g.describe() for g in cap.mid_guards], cap.regions, cap.breaks)
        variant.guard_checks = checks
        variant.guard_globals = {**cap.prog.user_globals, **consts}
        holder = cap.prog.consts.get("__fl_self_guard")
        if holder is not None:
            holder[0] = guard
        point.variants.append(variant)
        if self.fullgraph and cap.breaks:
            from .report import FullGraphError
            raise FullGraphError(cap.breaks)

    def resume_point(self, cont):
        key = cont.key()
        point = self.points.get(key)
        if point is None:
            point = ResumePoint(self, cont, f"resume{next(self._point_ids)}")
            self.points[key] = point
        return point

    def guard_holder(self, cap):
        return [None]

    def next_region_id(self):
        return next(self._region_ids)

    def dynamic_dims(self, real):
        if not self.dynamic:
            return ()
        return tuple(i for i, s in enumerate(real.shape) if s > 1)  # 0 and 1 stay specialized

    def variants(self):
        points = [self.root, *self.points.values()]
        return [v for p in points for v in p.variants]


class _ConstSource:
    """The function object itself, embedded in the guard (for its code-identity check)."""

    def __init__(self, obj):
        self.obj = obj

    def render(self, ctx):
        return ctx.const(self.obj)

    def describe(self):
        return getattr(self.obj, "__qualname__", "function")

    def __hash__(self):
        return hash(("const", id(self.obj)))

    def __eq__(self, other):
        return type(other) is _ConstSource and other.obj is self.obj


def _compile(src, name, consts, user_globals):
    names = sorted(consts)
    factory = f"def __fl_make({', '.join(names)}):\n" + "\n".join("    " + ln for ln in src.splitlines()) + \
        f"\n    return {name}\n"
    ns: dict = {}
    exec(compile(factory, f"<fuselens {name}>", "exec"), user_globals, ns)
    return ns["__fl_make"](*[consts[n] for n in names])


def _make_binder(info, fn):
    """A function with `fn`'s signature returning its parameters as a tuple (Python binds them)."""
    sig = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    posonly = [p for p in sig if p.kind is p.POSITIONAL_ONLY]
    parts, consts = [], {}
    for i, p in enumerate(sig):
        if p.kind is p.KEYWORD_ONLY and "*" not in parts and not any(q.startswith("*") for q in parts):
            parts.append("*")
        text = p.name
        if p.default is not inspect.Parameter.empty:
            consts[f"__d{i}"] = p.default
            text += f"=__d{i}"
        if p.kind is p.VAR_POSITIONAL:
            text = "*" + p.name
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + p.name
        parts.append(text)
        if posonly and p is posonly[-1]:
            parts.append("/")
    order = list(info.argnames) + [n for n in (info.varargs, info.varkw) if n]
    src = f"def __fl_bind({', '.join(parts)}):\n    return ({', '.join(order)}{',' if len(order) == 1 else ''})\n"
    binder = _compile(src, "__fl_bind", consts, {})

    def call(f, values):
        pos = [values[n] for n in info.argnames[:info.npos]]
        kw = {n: values[n] for n in info.argnames[info.npos:]}
        if info.varargs:
            pos.extend(values[info.varargs])
        if info.varkw:
            kw.update(values[info.varkw])
        return f(*pos, **kw)
    binder.params = order
    binder.call = call
    return binder
