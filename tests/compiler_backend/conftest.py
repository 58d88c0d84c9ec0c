import os

import pytest

# Every test compiles for real: a fallback to torch would make a correctness test vacuous.
os.environ.setdefault("FUSELENS_STRICT", "1")


@pytest.fixture(scope="session", autouse=True)
def kernel_cache(tmp_path_factory, worker_id):
    """One kernel cache for the run, shared by the xdist workers (the cache's writes are atomic):
    identical kernels compile once across tests and workers."""
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # each worker's base is <run's base>/popen-gwN
        root = root.parent
    old = os.environ.get("FUSELENS_CACHE_DIR")
    os.environ["FUSELENS_CACHE_DIR"] = str(root / "fuselens-cache")
    yield os.environ["FUSELENS_CACHE_DIR"]
    if old is None:
        os.environ.pop("FUSELENS_CACHE_DIR", None)
    else:
        os.environ["FUSELENS_CACHE_DIR"] = old
