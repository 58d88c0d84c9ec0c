"""A region: the ops between two places where Python has to run, as two FX graphs.

* `graph` holds aten ops (core-aten decompositions) recorded below autograd: what compiled back
  ends consume and what explain() shows.
* `tgraph` holds the torch-level calls the program made (`torch.sin`, `Tensor.view`, `x + y`):
  replayed with real tensors it is exactly what eager would do, including autograd, autocast
  and random numbers. The `eager` back end runs it; regions needing gradients fall back to it.

Both take the same inputs in the same order. Every change is logged so a statement that turns
out to break can be taken back.
"""
from __future__ import annotations

import torch
import torch.fx as fx

from .values import TVar


class Region:
    def __init__(self, index: int, ambient):
        self.index = index
        self.graph = fx.Graph()
        self.tgraph = fx.Graph()
        self.inputs: list = []  # TVars, and Ext floats passed as numbers
        self.outputs: list[TVar] = []
        self.node_of: dict[int, fx.Node] = {}  # id(fake) -> aten node
        self.tnode_of: dict[int, fx.Node] = {}  # id(TVar or Ext) -> torch-level node
        self.created: dict[int, TVar] = {}  # TVars produced here
        self.constants: dict[str, torch.Tensor] = {}
        self.ambient = ambient
        self.lines: dict = {}  # (file, line) -> number of aten ops
        self.ops: list = []  # (aten op name, (file, line))
        self.keep: list = []  # objects whose ids key the maps above
        self.mutates_inputs = False
        self.log: list = []
        self._gm = None
        self.tgm = None
        self.run = None
        self.name = ""
        self.autograd = "none needed"
        self.create_graph_line = None  # set when the code around it differentiates twice
        self.file_create_graph_line = None  # set when code in its files may (backends.py)
        self.dynamic = False  # some input may come with other sizes (dynamic=True)

    # -- undo --
    def log_mark(self) -> int:
        return len(self.log)

    def rollback(self, mark: int):
        while len(self.log) > mark:
            kind, a, b = self.log.pop()
            if kind == "node":
                a.graph.erase_node(a)
            elif kind == "bind":
                table, key = a
                if b is None:
                    table.pop(key, None)
                else:
                    table[key] = b
            elif kind == "input":
                self.inputs.pop()
            elif kind == "created":
                self.created.pop(a, None)
            elif kind == "op":
                self.ops.pop()
                self.lines[a] -= 1
                if not self.lines[a]:
                    del self.lines[a]
            elif kind == "const":
                del self.constants[a]
            elif kind == "mutates":
                self.mutates_inputs = a
            elif kind == "args":
                a.args, a.kwargs = b

    # -- building --
    def node(self, op, target, args=(), kwargs=None, name=None, graph=None):
        graph = self.graph if graph is None else graph
        if op == "placeholder":
            first = next((n for n in graph.nodes if n.op != "placeholder"), None)
            if first is None:
                n = graph.placeholder(name)
            else:
                with graph.inserting_before(first):
                    n = graph.placeholder(name)
        elif op == "get_attr":
            n = graph.get_attr(target)
        else:
            n = graph.call_function(target, args, kwargs)
        self.log.append(("node", n, None))
        return n

    def set_args(self, node, args, kwargs):
        """Rewrite a recorded node's arguments. Logged: the new ones may be nodes made after it
        (scalar inputs), which rollback can only erase once `node` no longer uses them."""
        self.log.append(("args", node, (node.args, node.kwargs)))
        node.args, node.kwargs = args, kwargs

    def _bind(self, table, key, node, obj):
        self.log.append(("bind", (table, key), table.get(key)))
        table[key] = node
        self.keep.append(obj)

    def bind(self, fake, node):
        self._bind(self.node_of, id(fake), node, fake)

    def bind_torch(self, value, node):
        self._bind(self.tnode_of, id(value), node, value)

    def placeholder(self, tv: TVar) -> fx.Node:
        name = f"in{len(self.inputs)}"
        node = self.node("placeholder", None, name=name)
        node.meta["val"] = tv.fake
        tnode = self.node("placeholder", None, name=name, graph=self.tgraph)
        self.inputs.append(tv)
        self.log.append(("input", None, None))
        self.bind(tv.fake, node)
        self.bind_torch(tv, tnode)
        return node

    def scalar_input(self, ext) -> fx.Node:
        """A Python number known only at run time, passed to the region as an argument."""
        for value, node in zip(self.inputs, (n for n in self.graph.nodes if n.op == "placeholder")):
            if value is ext:
                return node
        name = f"in{len(self.inputs)}"
        node = self.node("placeholder", None, name=name)
        node.meta["val"] = ext.value
        self.bind_torch(ext, self.node("placeholder", None, name=name, graph=self.tgraph))
        self.inputs.append(ext)
        self.log.append(("input", None, None))
        return node

    def constant(self, value) -> str:
        name = f"const{len(self.constants)}"
        self.constants[name] = value
        self.log.append(("const", name, None))
        return name

    def add_created(self, tv):
        self.created[id(tv)] = tv
        self.log.append(("created", id(tv), None))

    def add_op(self, name, where):
        self.ops.append((name, where))
        self.lines[where] = self.lines.get(where, 0) + 1
        self.log.append(("op", where, None))

    def set_mutates(self):
        if not self.mutates_inputs:
            self.log.append(("mutates", False, None))
            self.mutates_inputs = True

    def torch_call(self, func, args, kwargs, result, impure, loc, input_of):
        """Record the torch-level call that produced `result` (TVars inside it get nodes)."""
        def arg(a):
            t = type(a)
            if t is TVar:
                node = self.tnode_of.get(id(a))
                return node if node is not None else input_of(a)
            if t in (list, tuple):
                return t(arg(x) for x in a)
            if t is dict:
                return {k: arg(v) for k, v in a.items()}
            if t is slice:
                return slice(arg(a.start), arg(a.stop), arg(a.step))
            if id(a) in self.tnode_of:  # a run-time float passed as an input
                return self.tnode_of[id(a)]
            return a
        node = self.node("call_function", func, tuple(arg(a) for a in args), {k: arg(v) for k, v in kwargs.items()},
                         graph=self.tgraph)
        node.meta["impure"] = impure
        node.meta["stack_trace"] = loc.stack_trace()
        if type(result) is TVar:
            self.bind_torch(result, node)
        elif isinstance(result, (list, tuple)):
            for i, item in enumerate(result):
                if type(item) is TVar:
                    self.bind_torch(item, self.node("call_function", _getitem, (node, i), graph=self.tgraph))

    # -- finishing --
    def finish(self, outputs):
        """Set the outputs of both graphs and drop what does not feed them (keeping side effects)."""
        self.outputs = outputs
        out = self.graph.output(tuple(self.node_of[id(tv.fake)] for tv in outputs))
        _dce(self.graph, out, _impure)
        tout = self.tgraph.output(tuple(self.tnode_of[id(tv)] for tv in outputs))
        _dce(self.tgraph, tout, lambda n: n.meta.get("impure", False))

    @property
    def gm(self):
        """The aten graph as a GraphModule (built on first use)."""
        if self._gm is None:
            root = torch.nn.Module()
            for name, value in self.constants.items():
                setattr(root, name, value)
            self._gm = fx.GraphModule(root, self.graph)
        return self._gm

    def torch_runner(self):
        """A Python function running the torch-level graph (FX codegen resolves some torch
        callables by name and fails on them; ours passes every target and constant in)."""
        consts, lines, names = {}, [], {}

        def ref(a):
            if isinstance(a, fx.Node):
                return names[a]
            if isinstance(a, list) or type(a) is tuple:  # FX keeps lists as immutable_list
                inner = ", ".join(ref(x) for x in a)
                return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
            if isinstance(a, dict):
                return "{" + ", ".join(f"{ref(k)}: {ref(v)}" for k, v in a.items()) + "}"
            if type(a) is slice:
                return f"slice({ref(a.start)}, {ref(a.stop)}, {ref(a.step)})"
            if a is None or type(a) in (bool, int, str):
                return repr(a)
            name = f"c{len(consts)}"
            consts[name] = a
            return name
        params = []
        for node in self.tgraph.nodes:
            if node.op == "placeholder":
                names[node] = f"a{len(params)}"
                params.append(names[node])
            elif node.op == "call_function":
                names[node] = f"v{len(names)}"
                args = ", ".join([ref(a) for a in node.args] + [f"{k}={ref(v)}" for k, v in node.kwargs.items()])
                lines.append(f"    {names[node]} = {ref(node.target)}({args})")
            elif node.op == "output":
                lines.append(f"    return {ref(tuple(node.args[0]))}")
        src = f"def run({', '.join(params)}):\n" + "\n".join(lines) + "\n"
        factory = f"def make({', '.join(consts)}):\n" + "\n".join("    " + ln for ln in src.splitlines()) + \
            "\n    return run\n"
        ns: dict = {}
        exec(compile(factory, f"<fuselens region {self.index}>", "exec"), ns)
        run = ns["make"](*consts.values())
        run.source = src
        return run

    def has_effects(self) -> bool:
        return any(n.op == "call_function" and _impure(n) for n in self.graph.nodes)

    def changes_state(self) -> bool:
        """Writes to a tensor in place (random draws aside, which are effects too)."""
        return self.mutates_inputs or any(n.op == "call_function" and _mutates(n) for n in self.graph.nodes)


def _getitem(x, i):
    return x[i]


def _impure(node) -> bool:
    t = node.target
    return _mutates(node) or hasattr(t, "tags") and torch.Tag.nondeterministic_seeded in t.tags


def _mutates(node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _dce(graph, out_node, impure):
    for node in reversed(list(graph.nodes)):
        if node is out_node or node.op in ("placeholder", "output") or node.users:
            continue
        if node.op == "call_function" and impure(node):
            continue
        graph.erase_node(node)
