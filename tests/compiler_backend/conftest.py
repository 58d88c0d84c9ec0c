import os

import pytest

# Every test compiles for real: a fallback to torch would make a correctness test vacuous.
os.environ.setdefault("FUSELENS_STRICT", "1")


@pytest.fixture(scope="session", autouse=True)
def kernel_cache(tmp_path_factory):
    """One kernel cache for the session: identical kernels compile once across tests."""
    old = os.environ.get("FUSELENS_CACHE_DIR")
    os.environ["FUSELENS_CACHE_DIR"] = str(tmp_path_factory.mktemp("fuselens-cache"))
    yield os.environ["FUSELENS_CACHE_DIR"]
    if old is None:
        os.environ.pop("FUSELENS_CACHE_DIR", None)
    else:
        os.environ["FUSELENS_CACHE_DIR"] = old
