"""Behaviours measured on real Dynamo 2.13 with probe scripts that tests/dynamo_oracle.py cannot
judge in a corpus fixture (it classifies a failing guard on a comprehension's range as FL302, and
it checks FL301 only for cases with a second set of shapes), and parameter-name variants."""
from __future__ import annotations

import textwrap

from fuselens.analysis import analyze_source


def findings(source: str) -> list[tuple[int, str]]:
    report = analyze_source(textwrap.dedent(source), "<mem>/snippet.py")
    return sorted((f.span.line, f.code) for f in report.findings)


def test_comprehension_over_a_size_is_unrolled():
    # dynamic=True: "tensor 'x' size mismatch at index 0" on a second length
    assert findings('''\
        import torch

        @torch.compile
        def rows(x):
            return torch.stack([x[i] * 2 for i in range(x.shape[0])])
        ''') == [(5, "FL301")]


def test_loop_that_breaks_runs_in_python():
    # The .item() inside the loop makes Dynamo skip the frame: no guard on the trip count.
    assert findings('''\
        import torch

        @torch.compile
        def totals(x):
            out = []
            for i in range(x.shape[0]):
                out.append(x[i].sum().item())
            return out
        ''') == [(7, "FL102"), (7, "FL150")]


def test_loop_over_a_constant_range_is_not_guarded():
    assert findings('''\
        import torch

        @torch.compile
        def first_rows(x):
            out = x[0]
            for i in range(3):
                out = out + x[i]
            return out
        ''') == []


def test_optimizers_by_name_and_annotation():
    assert findings('''\
        import torch
        from torch.optim.lr_scheduler import LRScheduler

        @torch.compile
        def gan_step(x, g_opt, optimizer_D, sched: LRScheduler, amp: torch.amp.GradScaler, options):
            g_opt.zero_grad()
            optimizer_D.step()
            sched.step()
            amp.update()
            return x * 2
        ''') == [(6, "FL125"), (7, "FL125"), (8, "FL125"), (9, "FL125")]


def test_dict_keys_are_python_values():
    # No break on 2.13 in either meter; a tensor passed to an unannotated helper still branches (GB0170).
    assert findings('''\
        from typing import Dict
        import torch

        class Meter(torch.nn.Module):
            def forward(self, losses: Dict[str, torch.Tensor], n: int):
                total = sum(self.weight(k) * v for k, v in losses.items())
                for k in losses:
                    total = total + self.w(k) * losses[k]
                return total * n

            def weight(self, name: str) -> float:
                return 0.5 if name == "kd" else 1.0

            def w(self, name):
                return 0.5 if name == "kd" else 1.0

        class UnannotatedMeter(Meter):
            def forward(self, losses):
                total = sum(self.w(k) * v for k, v in losses.items())
                for k in losses.keys():
                    total = total + self.w(k) * losses[k]
                return total

        class TensorWeight(Meter):
            def forward(self, x):
                return self.sign(x) * x

            def sign(self, t):
                return 1.0 if t > 0 else -1.0
        ''') == [(29, "FL101")]


def test_break_inside_generator_or_dict_comprehension_skips_the_frame():
    # 2.13: GB8335 after the break in the generator and dict comprehension, and the later
    # graph_break() is never reported; the list comprehension resumes (GB0025 reported).
    assert findings('''\
        import torch

        @torch.compile
        def generator(xs):
            total = sum(t.sum().item() for t in xs)
            torch._dynamo.graph_break()
            return {i: t.sum().item() for i, t in enumerate(xs)}

        @torch.compile
        def dict_comprehension(xs):
            vals = {i: t.sum().item() for i, t in enumerate(xs)}
            torch._dynamo.graph_break()
            return vals

        @torch.compile
        def list_comprehension(xs):
            vals = [t.sum().item() for t in xs]
            torch._dynamo.graph_break()
            return vals
        ''') == [(5, "FL102"), (5, "FL150"), (11, "FL102"), (11, "FL150"), (17, "FL102"), (18, "FL131")]
