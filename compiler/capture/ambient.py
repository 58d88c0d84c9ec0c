"""Grad mode and autocast: the ambient state a region or fallback statement runs under."""
from __future__ import annotations

import contextlib

import torch

_DEVICES = ("cpu", "cuda")


class Ambient:
    __slots__ = ("grad", "autocast")

    def __init__(self, grad: bool, autocast: tuple):
        self.grad = grad
        self.autocast = autocast  # ((device, enabled, dtype), ...) for devices with autocast on

    @staticmethod
    def current() -> Ambient:
        on = tuple((d, True, torch.get_autocast_dtype(d)) for d in _DEVICES if torch.is_autocast_enabled(d))
        return Ambient(torch.is_grad_enabled(), on)

    def with_grad(self, grad: bool) -> Ambient:
        return Ambient(grad, self.autocast)

    def with_autocast(self, device: str, enabled: bool, dtype) -> Ambient:
        rest = tuple(a for a in self.autocast if a[0] != device)
        return Ambient(self.grad, rest + (((device, True, dtype),) if enabled else ()))

    def __eq__(self, other):
        return isinstance(other, Ambient) and self.grad == other.grad and self.autocast == other.autocast

    def __hash__(self):
        return hash((self.grad, self.autocast))

    def apply(self):
        """Context manager: enter this state (used for fake execution and capture-time runs)."""
        stack = contextlib.ExitStack()
        if torch.is_grad_enabled() != self.grad:
            stack.enter_context(torch.set_grad_enabled(self.grad))
        for device in _DEVICES:
            want = next((a for a in self.autocast if a[0] == device), None)
            if torch.is_autocast_enabled(device) != (want is not None) or \
                    (want is not None and torch.get_autocast_dtype(device) != want[2]):
                stack.enter_context(torch.autocast(device, dtype=want[2] if want else None,
                                                   enabled=want is not None))
        return stack

    def render(self, base: Ambient, torch_name: str) -> list[str]:
        """Context expressions that move from `base` to this state (for `with ...:` in the program)."""
        parts = []
        if self.grad != base.grad:
            parts.append(f"{torch_name}.set_grad_enabled({self.grad})")
        for device in _DEVICES:
            want = next((a for a in self.autocast if a[0] == device), None)
            have = next((a for a in base.autocast if a[0] == device), None)
            if want != have:
                if want is None:
                    parts.append(f"{torch_name}.autocast({device!r}, enabled=False)")
                else:
                    parts.append(f"{torch_name}.autocast({device!r}, dtype={torch_name}.{str(want[2])[6:]})")
        return parts

    def describe(self) -> str:
        ac = ", ".join(f"autocast {d} {str(t)[6:]}" for d, _, t in self.autocast) or "autocast off"
        return f"grad {'on' if self.grad else 'off'}, {ac}"
