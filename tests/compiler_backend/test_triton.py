"""Triton backend correctness: natively on a GPU, else on the CPU through the Triton interpreter
(tests/conftest.py sets TRITON_INTERPRET=1 for the whole run when there is no GPU)."""
import os

import pytest
import torch

if torch.cuda.is_available():
    DEVICE = "cuda"
elif os.environ.get("TRITON_INTERPRET") == "1":
    DEVICE = "cpu"
else:
    pytest.skip("no GPU and the Triton interpreter is not in use", allow_module_level=True)
triton = pytest.importorskip("triton")

from fl_helpers import check  # noqa: E402
from triton_cases import cases  # noqa: E402

CASES = cases(DEVICE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_matches_eager(name):
    fn, args = CASES[name]
    info = check(fn, *args, backend="triton")
    assert info.backend == "triton" and "@triton.jit" in info.source


def test_log1p_expm1_tanh_keep_tiny_values_exact():
    """Relative accuracy where the naive forms (log(1 + x), exp(x) - 1) round tiny x to 0, and at
    the edges: -1, overflow, infinities and NaN."""
    x = torch.tensor([1e-30, -3e-9, 2e-8, 1e-5, -0.3, 0.7, 3.0, -1.0, -25.0, 30.0, 100.0, float("inf"),
                      float("-inf"), float("nan")], device=DEVICE)
    check(lambda x: (x.log1p(), x.expm1(), x.tanh()), x, backend="triton", atol=0, rtol=2e-6)
