"""The op matrix: every listed torch op inside a small program, compiled vs eager."""
import pytest

from .generated import op_matrix
from .harness import check

OPS = op_matrix()


@pytest.mark.parametrize("name,fn,calls,op", OPS, ids=[f"{o[0]}:{o[3]}" for o in OPS])
def test_op(name, fn, calls, op):
    check(fn, calls)
