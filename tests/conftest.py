"""Suite-wide setup that must happen before any test module imports triton."""
import os
import shutil

# Triton builds its standard-library @jit helpers (tl.sum's combine function, ...) when it is
# first imported, in the mode TRITON_INTERPRET says at that moment. Whichever test imports
# triton first (torch.compile tests do, through Inductor) would otherwise fix the mode for the
# whole run, and the interpreter tests would fail depending on test order. Without a GPU the
# interpreter is the only way Triton runs, so choose it here, once, for the whole suite.
if not shutil.which("nvidia-smi"):
    os.environ.setdefault("TRITON_INTERPRET", "1")
