"""Control flow across statements: inlined calls, returns, loops (unrolled, or data-dependent
through loop-head units), data-dependent branches with lazily captured sides, jumps."""
from __future__ import annotations

from .emit import CaptureError
from .frames import Block, Call, GenLoop, Loop, With, Yielded
from .hoist import SwitchesGradMode
from .program import Jump
from .values import Break, Ext, TVar, VarSource


class ControlMixin:
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
            raise SwitchesGradMode(f"{frame.info.qualname} changes grad mode (called inside an expression)", None, node)
        self.depth += 1
        self.nested += 1
        cont = [Call(None, frame, "nested", node), Block(frame, frame.info.body)]
        saved, loc = self.cont, self.tracer.loc
        self.cont = saved + cont
        try:
            return self.drive(self.cont, nested=True)[1]
        finally:
            self.cont = saved
            self.tracer.loc = loc  # the rest of the caller's expression is the caller's line
            self.nested -= 1
            self.depth -= 1

    def do_return(self, frame, value, nested):
        """`return value` from `frame`: unwind to its call and deliver the value."""
        cont = self.cont
        while cont and not (type(cont[-1]) is Call and cont[-1].callee is frame):
            e = cont.pop()
            if type(e) is With:  # the region ending here computed `value`: keep it
                self.set_ambient(e.saved, flush=not nested, keep=(value,))
            elif type(e) is Call:  # a generator the returning loop body was run by
                self.depth -= 1
            if not cont:
                return self.finish(value)
        call = cont.pop()
        if call.target == "nested":
            return ("value", value)
        self.depth -= 1
        if call.target == "generator":  # it ended: so does the loop over it (GenLoop, below)
            return None
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
            if type(e) is Yielded and e.frame is frame and not exit_loop:
                return  # `continue`: the generator goes on after its yield
            cont.pop()
            if type(e) is GenLoop and e.frame is frame:
                return  # `break`: the generator is dropped, suspended, as Python drops it
            if type(e) is With:
                self.set_ambient(e.saved)
            elif type(e) is Call:
                self.depth -= 1

    def set_ambient(self, state, flush=True, keep=()):
        if state != self.ambient:
            if flush:
                self.flush(keep)
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
        self.locate(frame, node)
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
        # The side not taken resumes from a snapshot, which needs every live value in a program
        # variable: the open region ends here either way (on a value Python computed, not a break)
        self.flush(keep=[test])
        if type(test) is TVar:
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
