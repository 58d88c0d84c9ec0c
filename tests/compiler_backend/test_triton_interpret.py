"""Triton backend correctness on the CPU through the Triton interpreter (TRITON_INTERPRET=1)."""
import os

import pytest

# tests/conftest.py chooses the interpreter for the whole run when there is no GPU; on a GPU
# machine Triton runs natively and tests/compiler_backend/test_triton_gpu.py covers it.
if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("Triton runs natively on this machine (see test_triton_gpu.py)", allow_module_level=True)

triton = pytest.importorskip("triton")

from fl_helpers import check  # noqa: E402
from triton_cases import cases  # noqa: E402


CASES = cases("cpu")


@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_matches_eager(name):
    fn, args = CASES[name]
    info = check(fn, *args, backend="triton")
    assert info.backend == "triton" and "@triton.jit" in info.source
