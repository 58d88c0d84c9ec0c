"""Example inputs from shape annotations (the worker's parser; no server, no user code run)."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server" / "worker"))
import fuselens_worker_shapes as shapes  # noqa: E402

SOURCE = textwrap.dedent('''\
    def jax(x: Float[Tensor, "batch 16"], idx: Int64[torch.Tensor, "batch"], *, mask: "Bool[Tensor, '4']"):
        ...

    def comments(x: torch.Tensor,  # shape: (8, 16)
                 y: torch.Tensor,  # shape: (16,) float64
                 scale: float = 2.0):
        ...

    def named(a, b):  # shape: a=(4, 4), b=(4,) int32
        ...

    def variadic(x: Float[Tensor, "*batch 3"]): ...

    def partly(x: Float[Tensor, "8"], y): ...

    def bare(x, y=1): ...

    class Model:
        def forward(self, x: Float[Tensor, "2 3"]): ...
''')


def test_jaxtyping_and_comment_spellings():
    assert shapes.specs(SOURCE, "jax") == {"x": (["batch", "16"], "float32"), "idx": (["batch"], "int64"),
                                           "mask": (["4"], "bool")}
    assert shapes.specs(SOURCE, "comments") == {"x": (["8", "16"], "float32"), "y": (["16"], "float64")}
    assert shapes.specs(SOURCE, "named") == {"a": (["4", "4"], "float32"), "b": (["4"], "int32")}
    assert shapes.specs(SOURCE, "Model.forward") == {"x": (["2", "3"], "float32")}


@pytest.mark.parametrize("function, why", [
    ("partly", "parameter y has no shape annotation"),
    ("bare", "its parameters have no shape annotations"),
    ("missing", "its definition was not found in the file"),
])
def test_what_does_not_give_inputs_says_why(function, why):
    with pytest.raises(shapes.NoAnnotations, match=why):
        shapes.specs(SOURCE, function)


def test_built_tensors_share_named_sizes():
    tensors, description = shapes.build(shapes.specs(SOURCE, "jax"))
    assert tensors["x"].shape == (8, 16) and tensors["idx"].shape == (8,) and tensors["mask"].dtype.is_floating_point is False
    assert description == ("shape annotations: x (8, 16) float32; idx (8,) int64; mask (4,) bool "
                           "(named sizes: batch=8)")
    tensors, _ = shapes.build(shapes.specs(SOURCE, "variadic"))
    assert tensors["x"].shape == (3,)
