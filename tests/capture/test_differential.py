"""Every program in programs.py: compiled vs eager on each of its calls."""
import pytest

from .harness import check
from .programs import CASES


@pytest.mark.parametrize("name,fn,calls,atol", CASES, ids=[c[0] for c in CASES])
def test_program(name, fn, calls, atol):
    check(fn, calls, atol=atol)
