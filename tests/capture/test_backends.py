"""Regions through back ends: FuseLens' code generator, AOTAutograd for gradients, custom ones."""
import pytest
import torch

from fuselens.compiler.capture import backends, compile as fl_compile, explain

from .harness import check


def pointwise_and_reduce(x, y):
    a = torch.sin(x) * y + 1
    return a.relu().sum(-1)


def mlp_loss(x, w):
    h = torch.tanh(x @ w) * 2
    return (h * h).sum()


def with_break(x):
    y = x.exp()
    print("mid", y.shape)
    return y.sum(0)


def test_fuselens_backend_runs_regions_as_kernels():
    x, y = torch.randn(16, 16), torch.randn(16, 16)
    f = check(pointwise_and_reduce, [((x, y), {}), ((x * 2, y), {})], backend="fuselens")
    run = f._fuselens.variants()[0].regions[0].run
    info = getattr(run, "fuselens_info", None)
    assert info is not None and info.kernels >= 1 and not info.fallback
    assert "pointwise_and_reduce" in info.source or "test_backends.py" in info.source  # source-line map


def test_fuselens_backend_with_breaks():
    check(with_break, [((torch.randn(8, 8),), {})], backend="fuselens")


def test_gradients_through_aot_autograd():
    x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
    check(mlp_loss, [((x, w), {})], backend="fuselens")
    rep = explain(mlp_loss, backend="fuselens")(x, w)
    assert rep.regions[0].autograd.startswith("compiled forward and backward")


class BiLSTMHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(6, 5, bidirectional=True)
        self.out = torch.nn.Linear(10, 7)

    def forward(self, x):
        recurrent, _ = self.rnn(x)
        return self.out(recurrent)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_an_lstm_with_gradients_compiles_forward_and_backward(monkeypatch, training):
    # mkldnn_rnn_layer returns the workspace its backward needs only while grad mode is on; the
    # compiled forward ran with it off, and the backward crashed the process on an empty workspace;
    # in eval mode the layer was traced with train=False, which returns none at all
    compiled_rnns = []
    original = backends.FuseLensBackend.compile_autograd

    def spy(self, region, example_inputs):
        run, how = original(self, region, example_inputs)
        if any("mkldnn_rnn_layer" in str(n.target) for n in region.gm.graph.nodes):
            compiled_rnns.append(how)
        return run, how
    monkeypatch.setattr(backends.FuseLensBackend, "compile_autograd", spy)
    torch.manual_seed(0)
    model = BiLSTMHead().train(training)
    torch.manual_seed(0)
    twin = BiLSTMHead().train(training)
    compiled = fl_compile(twin, backend="fuselens")
    x = torch.randn(9, 2, 6)
    for _ in range(2):
        ref, got = model(x), compiled(x)
        ref.square().sum().backward()
        got.square().sum().backward()
        torch.testing.assert_close(got, ref)
        for p, q in zip(model.parameters(), twin.parameters()):
            torch.testing.assert_close(q.grad, p.grad)
    assert compiled_rnns and all(how.startswith("compiled forward and backward") for how in compiled_rnns)


def random_cutoff(x):
    cutoff = torch.empty([], dtype=torch.int64).random_(1, 4)
    return x * cutoff


def test_an_op_whose_overload_name_is_a_keyword_runs_in_python():
    # aten.random_.from: no FX graph can spell its name (the generated code did not compile)
    torch.manual_seed(0)
    expected = random_cutoff(torch.ones(3))
    torch.manual_seed(0)
    got = fl_compile(random_cutoff, backend="fuselens")(torch.ones(3))
    torch.testing.assert_close(got, expected)


def input_gradient_penalty(x, w):
    h = torch.tanh(x @ w)
    g, = torch.autograd.grad(h.sum(), x, create_graph=True)
    return (g ** 2).sum()


def test_second_order_gradients_replay_regions_through_torch():
    x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
    check(input_gradient_penalty, [((x, w), {})], backend="fuselens")  # grads of w need double backward
    rep = explain(input_gradient_penalty, backend="fuselens")(x, w)
    assert "create_graph=True at line" in rep.regions[0].autograd


class _Residuals:
    @staticmethod
    def curvature(u, x):
        return _second_derivative(u, x)

    @classmethod
    def get(cls, name):
        return getattr(cls, name)


def _second_derivative(u, x):
    du, = torch.autograd.grad(u.sum(), x, create_graph=True)
    d2u, = torch.autograd.grad(du.sum(), x, create_graph=True)
    return d2u


def residual_via_dispatch(x, w, name):
    u = torch.nn.functional.dropout(torch.tanh(x * w), 0.3) * x  # the replay draws the same mask
    return _Residuals.get(name)(u, x).pow(2).mean()


def test_a_helper_run_after_the_region_may_differentiate_it_twice():
    # `_Residuals.get(name)` runs as Python: the region computing u is flushed before it, and the
    # create_graph=True calls are nowhere on the stack then. AOT's compiled backward refuses a
    # second differentiation; the region's backward replays its torch calls when asked to.
    x, w = torch.randn(6, 5, requires_grad=True), torch.randn(6, 5, requires_grad=True)
    check(residual_via_dispatch, [((x, w, "curvature"), {})], backend="fuselens")  # grads of x, w: third order
    (region, *_) = explain(residual_via_dispatch, backend="fuselens")(x, w, "curvature").regions
    assert region.autograd.startswith("compiled forward and backward") and "replays" in region.autograd


def stop_gradient(x, w):
    h = x @ w
    return h.detach() * 2, (h * h).sum()


def _recording_backend(graphs):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return backend


@pytest.mark.parametrize("kind", ["fuselens", "custom"])
def test_detached_region_outputs_do_not_require_grad(kind):
    x, w = torch.randn(8, 8), torch.randn(8, 8, requires_grad=True)
    backend = kind if kind == "fuselens" else _recording_backend([])
    f = check(stop_gradient, [((x, w), {})], backend=backend)  # compares requires_grad too
    assert f._fuselens.variants()[0].regions[0].autograd.startswith("compiled forward and backward")


def test_custom_backend_compiles_forward_and_backward_of_a_region_needing_grad():
    """As torch.compile's aot_autograd does: the back end gets the joint graph's forward and then
    its backward (which has the forward's saved values among its inputs), each to compile."""
    graphs = []
    x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
    check(mlp_loss, [((x, w), {})], backend=_recording_backend(graphs))  # compares gradients too
    forward, backward = graphs
    ops = [{n.target for n in g.graph.nodes if n.op == "call_function"} for g in graphs]
    assert torch.ops.aten.tanh.default in ops[0] and torch.ops.aten.tanh.default not in ops[1]
    inputs = [n.name for n in backward.graph.nodes if n.op == "placeholder"]
    assert any(name.startswith("tangents") for name in inputs) and len(inputs) > 1


def test_custom_backend_sees_aten_graphs_with_source_lines():
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return gm.forward
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    f = fl_compile(pointwise_and_reduce, backend=backend)
    assert torch.allclose(f(x, y), pointwise_and_reduce(x, y))
    (gm,) = seen
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert all(isinstance(t, torch._ops.OpOverload) for t in targets)
    traces = [n.meta["stack_trace"] for n in gm.graph.nodes if n.op == "call_function"]
    assert all("test_backends.py" in t and "pointwise_and_reduce" in t for t in traces)


def test_unknown_backend_name():
    with pytest.raises(ValueError):
        fl_compile(pointwise_and_reduce, backend="nope")


STEPS = 0


def counts_steps(x, w):
    global STEPS  # capture does not take `global`: the function runs through Dynamo
    STEPS += 1
    return torch.tanh(x @ w).sum()


@pytest.mark.parametrize("kind", ["aten", "instance"])
def test_a_function_capture_cannot_take_runs_through_dynamo_on_any_backend(kind):
    graphs = []

    class Recording(backends.AtenBackend):
        def compile_aten(self, gm, example_inputs):
            graphs.append(gm)
            return gm.forward
    x, w = torch.randn(4, 4), torch.randn(4, 4, requires_grad=True)
    f = check(counts_steps, [((x, w), {})], backend="aten" if kind == "aten" else Recording())
    assert f._fuselens.graphs == 1
    if kind == "instance":  # forward and backward, as aten graphs
        assert len(graphs) == 2
        assert all(n.target.namespace == "aten" for g in graphs for n in g.graph.nodes if n.op == "call_function"
                   and hasattr(n.target, "namespace"))


class InPlaceActivations(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.act = torch.nn.Hardswish(inplace=True)
        self.cell = torch.nn.LSTMCell(4, 5)

    def forward(self, x, state):
        h = self.act(self.conv(x)).mean((-1, -2))
        return self.cell(h, state)[0].sum()


def test_in_place_ops_and_lstm_cells_compile_forward_and_backward():
    # hardswish_ decomposed as copy_(x, hardswish(x)) wrote over the x its backward saved, and
    # lstm_cell's gates (pieces of unsafe_split, updated in place) became split_with_sizes outputs,
    # which autograd does not let anyone write to: AOTAutograd refused both, torch replayed them
    model = InPlaceActivations()
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    state = (torch.randn(2, 5), torch.randn(2, 5))
    f = check(model, [((x, state), {})], backend="fuselens")
    (region,) = f._fl_forward._fuselens.variants()[0].regions
    assert region.autograd.startswith("compiled forward and backward"), region.autograd
