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
