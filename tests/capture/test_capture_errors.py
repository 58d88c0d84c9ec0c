"""What fuselens.compile does when the capture meets something it cannot express: before anything
ran in Python (or changed state), the function runs eagerly instead; after, the error is raised,
since running the function again would repeat what already ran."""
import pytest
import torch
import torch.nn as nn

from fuselens.compiler.capture import compile as fl_compile
from fuselens.compiler.capture.emit import CaptureError

from .harness import check


def _grads(parameters):
    # reading p.grad breaks with `parameters` (an iterator over the module's parameters) still
    # live: the transformed program has no variable that can hold that iterator
    return [p.grad.detach() for p in parameters if p.grad is not None]


def grad_norm(model):
    grads = _grads(model.parameters())
    return torch.stack([g.norm() for g in grads]).norm()


def noisy_grad_norm(model):
    noise = torch.rand(())  # drawn by a region before the capture gives up: eager draws it again
    grads = _grads(model.parameters())
    return torch.stack([g.norm() for g in grads]).norm() + noise


def grad_norm_after_print(model):
    print("norm of", type(model).__name__)
    grads = _grads(model.parameters())
    return torch.stack([g.norm() for g in grads]).norm()


def _model():
    model = nn.Linear(3, 2)
    model(torch.rand(4, 3)).sum().backward()
    return model


@pytest.mark.parametrize("fn", [grad_norm, noisy_grad_norm])
def test_nothing_ran_yet_so_the_function_runs_eagerly(fn):
    with pytest.warns(UserWarning, match="could not be captured.*ran without capture"):
        check(fn, [((_model(),), {})])


def test_after_a_statement_ran_in_python_the_error_is_raised():
    compiled = fl_compile(grad_norm_after_print)
    with pytest.raises(CaptureError, match="iterator"):
        compiled(_model())
