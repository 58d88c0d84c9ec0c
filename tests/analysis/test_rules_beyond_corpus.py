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


def test_break_inside_a_comprehension_resumes_only_over_an_iterator_dynamo_can_rebuild():
    # 2.13: after a break inside, Dynamo rebuilds the comprehension's iterator to resume. A generator
    # expression or enumerate cannot be rebuilt (GB8335), nor an iterator over a dict (GB0092): the
    # frame is skipped and the later graph_break() is never reported. A dict comprehension over a
    # list, and a list comprehension, resume (GB0025 reported).
    assert findings('''\
        import torch

        @torch.compile
        def generator(xs):
            total = sum(t.sum().item() for t in xs)
            torch._dynamo.graph_break()
            return total

        @torch.compile
        def over_enumerate(xs):
            vals = {i: t.sum().item() for i, t in enumerate(xs)}
            torch._dynamo.graph_break()
            return vals

        @torch.compile
        def over_items(d):
            vals = [v.sum().item() for k, v in d.items()]
            torch._dynamo.graph_break()
            return vals

        @torch.compile
        def dict_over_a_list(pairs: list):
            vals = {k: v.sum().item() for k, v in pairs}
            torch._dynamo.graph_break()
            return vals
        ''') == [(5, "FL102"), (5, "FL134"), (5, "FL150"), (11, "FL102"), (11, "FL134"), (11, "FL150"),
                 (17, "FL102"), (17, "FL133"), (17, "FL150"), (23, "FL102"), (24, "FL131")]


def test_a_comprehension_python_runs_is_a_frame_dynamo_cannot_iterate():
    # 2.13, "Missing tp_iternext" (GB4347): a comprehension holding a tensor (here `w`) that Python
    # runs, after a break inside it or in a skipped part of the frame, is compiled as a frame of its
    # own, and only a tuple or range iterator can be its input. Without a tensor in it, Dynamo
    # leaves it alone; over a range its body is traced (the `.item()` is reported).
    assert findings('''\
        import torch

        def brk(t):
            return t * t.sum().item()

        @torch.compile
        def zipped(xs: list, ys: list, w):
            return [brk(a) + w for a, b in zip(xs, ys)]

        @torch.compile
        def skipped(xs: list, w, n: int):
            for x in xs:
                if x.sum() > 0:
                    w = w + 1
            a = [t * w for t in xs]
            b = [t * 2 for t in xs]
            c = [xs[i].sum().item() * w for i in range(n)]
            return a, b, c

        @torch.compile
        def earlier_in_the_skipped_frame(model: torch.nn.Module, x, n: int):
            zeros = {name: torch.zeros_like(p) for name, p in model.named_parameters()}
            for i in range(n):
                print(i)
            return zeros
        ''') == [(4, "FL102"), (8, "FL135"), (13, "FL101"), (13, "FL150"), (15, "FL135"), (17, "FL102"),
                 (17, "FL150"), (22, "FL135"), (24, "FL110"), (24, "FL150")]


def test_a_break_inside_a_property_skips_the_frame():
    # 2.13: the break is at an attribute load, where Dynamo cannot resume: the print is not reported
    assert findings('''\
        import torch
        from torch import nn

        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = torch.tensor([0.5, 0.7])

            @property
            def scale(self):
                return float(self.table[0])

            def forward(self, x):
                s = self.scale
                print("after")
                return x * s
        ''') == [(11, "FL102"), (14, "FL150")]


def test_a_break_entering_or_inside_a_user_context_manager_skips_the_frame():
    # 2.13: Dynamo inlines __enter__; the timer's perf_counter() breaks there (GB0007) and the later
    # .item() is never reported; nor is the print after an .item() inside the with body. __exit__
    # then runs in Python, and its frame holds no tensor: its perf_counter() is not reported.
    assert findings('''\
        import time
        import torch

        class Timer:
            def __enter__(self):
                self.start = time.perf_counter()
                return self

            def __exit__(self, *exc):
                self.elapsed = time.perf_counter() - self.start

        class Quiet:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        @torch.compile
        def timed(x):
            with Timer():
                y = x * 2
            return y + y.sum().item()

        @torch.compile
        def break_in_body(x):
            with Quiet():
                z = x.sum().item()
            print("after")
            return x + z
        ''') == [(6, "FL121"), (21, "FL150"), (28, "FL102"), (28, "FL150")]


def test_a_hook_returning_a_constant_folds_the_branch_that_calls_it():
    # optical_flow (round 15): the base class's should_stop returns False, so Dynamo never traces
    # the logging call in the branch
    assert findings('''\
        import logging
        import torch
        from torch import nn

        logger = logging.getLogger(__name__)

        class Refiner(nn.Module):
            def should_stop(self, delta) -> bool:
                return False

            def forward(self, x):
                for step in range(3):
                    x = x * 0.5
                    if self.should_stop(x):
                        logger.debug("early exit after %d steps", step)
                        break
                return x
        ''') == []


def test_a_resumed_part_with_no_tensor_operation_runs_in_python():
    # 2.13 skips a resumed part of a frame that traces no tensor operation ("No ops traced"): the
    # dict comprehension after the break then runs in Python, as a frame Dynamo cannot iterate
    # (GB4347). With a multiplication in it, the part is compiled and the comprehension inlined.
    assert findings('''\
        import torch

        @torch.compile
        def relabel(est: dict, scores):
            names = list(est)
            best = int(scores.argmax())
            return {name: est[names[(i + best) % 2]] for i, name in zip(range(2), names)}

        @torch.compile
        def rescale(est: dict, scores):
            names = list(est)
            best = int(scores.argmax())
            return {name: est[name] * best for i, name in zip(range(2), names)}
        ''') == [(6, "FL102"), (7, "FL135"), (12, "FL102")]


def test_a_comprehension_naming_a_torch_submodule_is_compiled_as_a_frame():
    # 2.13's has_tensor_in_frame compiles a frame that names a global bound to any torch module
    # (here torch.nn.init), but not one bound to a numpy submodule: Python runs both comprehensions
    # (the frame is skipped), and only the first one is handed to Dynamo, which cannot iterate a
    # list (GB4347). randint's break is reported by the trace before the skip.
    assert findings('''\
        import torch
        from torch.nn import init
        from numpy import random as npr

        @torch.compile
        def scaled(x, names: list, n: int):
            gains = [init.calculate_gain(name) for name in names]
            for i in range(n):
                print(i)
            return x * gains[0]

        @torch.compile
        def seeded(x, names: list, n: int):
            seeds = [npr.randint(0, 10) + len(name) for name in names]
            for i in range(n):
                print(i)
            return x * seeds[0]
        ''') == [(7, "FL135"), (9, "FL110"), (9, "FL150"), (14, "FL104"), (16, "FL110"), (16, "FL150")]


def test_trace_numpy_and_sizes_turned_into_numbers():
    # torch.jit.trace 2.13 (probe scripts): .numpy(), torch.from_numpy and torch.as_tensor of an
    # array warn (the values become constants), NumPy's own work on the host is silent; a size
    # turned into a number by int() or math.floor, or counted out by range(), is a plain number
    # from then on: branching on it warns nothing more.
    assert findings('''\
        import math
        import numpy as np
        import torch

        def clamp_to_percentiles(x):
            lo, hi = np.percentile(x.detach().numpy(), [2, 98])
            return x.clamp(float(lo), float(hi))

        def ramp(x):
            return x * torch.from_numpy(np.linspace(0, 1, 5)).to(x)

        def rounded(x):
            y = int(math.floor(x.shape[0] / 2 + 0.5) * 2)
            out = x * 2 if y >= 4 else x
            for i in range(x.shape[0]):
                if i > 0:
                    out = out + i
            return out

        def export(x):
            return [torch.jit.trace(clamp_to_percentiles, x), torch.jit.trace(ramp, x), torch.jit.trace(rounded, x)]
        ''') == [(6, "FL203"), (10, "FL203"), (13, "FL203")]


def test_library_breaks_found_in_round_16():
    # measured on 2.13 (gan_training, export_text_detection): warnings.simplefilter is skipped
    # (GB0007), and so is warnings.catch_warnings.__init__ when a subclass is built; Tensor.random_
    # is refused (GB0107); nonzero(as_tuple=True) gives a tuple, whose unpacking bakes nothing
    # under the tracer; a string parameter left at its default folds its comparisons.
    assert findings('''\
        import warnings
        import torch

        class suppress(warnings.catch_warnings):
            pass

        @torch.compile
        def quiet(x):
            warnings.simplefilter("ignore")
            with suppress():
                y = x * 2
            return y.new_empty(()).random_(1, 5)

        def centroid(score, limit: str = "max"):
            ys, xs = torch.nonzero(score > 0.5, as_tuple=True)
            if limit == "max":
                return ys.float().mean()
            return xs.float().mean() if xs.numel() > 3 else score.sum()

        traced = torch.jit.trace(centroid, (torch.rand(4, 4),))
        ''') == [(9, "FL121"), (10, "FL121"), (12, "FL121")]


def test_hooks_handed_to_a_module_built_at_module_level_run_in_its_forward():
    # export_keyword_spotting's WakeWordDetector (round 15), measured on 2.13: the detector built
    # in CASES with [partial(log_detection, ...)] calls the logger from its forward (GB0291); a
    # construction argument that calls a function (make_model()) is not walked.
    assert findings('''\
        import logging
        from functools import partial
        import torch
        from torch import nn

        logger = logging.getLogger(__name__)

        def log_detection(score, source: str = "mic"):
            logger.info("[%s] p=%.2f", source, score)

        def make_model():
            print("building")
            return nn.Linear(4, 4)

        class Detector(nn.Module):
            def __init__(self, model, callbacks=()):
                super().__init__()
                self.model, self.callbacks = model, list(callbacks)

            def forward(self, x):
                y = self.model(x)
                for callback in self.callbacks:
                    callback(y.amax())
                return y

        CASES = {"smoke": lambda: (Detector(make_model(), [partial(log_detection, source="smoke")]), ())}
        ''') == [(9, "FL111"), (23, "FL150")]


def test_a_traced_construction_reads_what_the_export_function_bound_its_arguments_to():
    # export_license_plate (round 22), checked with torch.jit.trace 2.13: `rec_cfg` is a local of
    # the export function bound once to a config that picks the convolutional head, so `__init__`
    # never builds the LSTM, whose size checks the trace would bake in (FL203). A local bound twice
    # could be either value: the LSTM may be there. (FL123 is the forward as a compile root.)
    source = '''\
        from dataclasses import dataclass
        import torch
        from torch import nn

        @dataclass
        class RecConfig:
            seq: str = "lstm"

        EDGE = RecConfig(seq="conv")

        class Head(nn.Module):
            def __init__(self, cfg: RecConfig):
                super().__init__()
                if cfg.seq == "lstm":
                    self.rnn = nn.LSTM(4, 4)
                else:
                    self.rnn = nn.Conv1d(4, 4, 1)

            def forward(self, x):
                if isinstance(self.rnn, nn.LSTM):
                    x, _ = self.rnn(x)
                    return x
                return self.rnn(x)

        def export_head(x, fast: bool):
            cfg, other = EDGE, None
            {rebind}
            return torch.jit.trace(Head(cfg), (x,))
        '''
    def traced(rebind: str) -> list[tuple[int, str]]:
        return [f for f in findings(source.replace("{rebind}", rebind)) if f[1].startswith("FL2")]

    assert traced("pass") == []
    assert (21, "FL203") in traced("cfg = RecConfig() if fast else cfg")


def test_a_trace_runs_the_module_in_the_mode_the_export_function_left_it_in():
    # export_table_structure (round 26), checked with torch.jit.trace 2.13 on this very source:
    # the model is traced in eval mode (`.eval()` where it is built, or as a statement), so the
    # `if self.aux and self.training:` branch, whose tensor iteration would warn (FL203), is not
    # run; a module traced as built (training mode) runs it. Eval mode reaches submodules too.
    source = '''\
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x):
                y = self.proj(x)
                if self.training:
                    return [r for r in y]
                return y

        class Net(nn.Module):
            def __init__(self, aux: bool = True):
                super().__init__()
                self.head = Head()
                self.aux = aux

            def forward(self, x):
                out = self.head(x)
                if self.aux and self.training:
                    return [o for o in out]
                return out

        class Wrapper(nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x)

        def export(x):
            {build}
        '''
    def traced(build: str) -> list[tuple[int, str]]:
        code = textwrap.dedent(source).replace("{build}", build)
        assert "def export(x):" in code and compile(code, "<export>", "exec")
        return [f for f in findings(code) if f[1].startswith("FL2")]

    assert traced("model = Net().eval()\n    return torch.jit.trace(Wrapper(model), (x,))") == []
    assert traced("net = Net()\n    net.eval()\n    return torch.jit.trace(net, (x,))") == []
    assert traced("return torch.jit.trace(Net().train(False), (x,))") == []
    assert traced("return torch.jit.trace(Net(), (x,))") == [(12, "FL203"), (24, "FL203")]
    # set both ways in the function: the mode at the trace is not known, both branches count
    assert (24, "FL203") in traced("net = Net().eval()\n    net.train()\n    return torch.jit.trace(net, (x,))")
    assert (24, "FL203") in traced("model = Net().eval()\n    model.train()\n    return torch.jit.trace(Wrapper(model), (x,))")
    assert traced("return torch.jit.trace(Wrapper(Net().eval()), (x,))") == []


def test_a_clock_reading_read_after_a_break_recompiles_where_its_value_is_needed():
    # Probed on 2.13 with this very source (adaptive_token_vit:449 and open_vocab_detection:451
    # of round 25 were the first): `start` read as a local of a resumed part is specialized when
    # that part breaks again later or the value enters tensor arithmetic, so the next call
    # recompiles (the guard names the line that read it): `symbolic` recompiles at 41 and 43,
    # whose parts end at the next clock call, not at 44. Read before the break
    # (`start - time...`) or handed on right after its own call it is a stack value: no guard.
    assert findings('''\
        import logging
        import time
        import torch

        logger = logging.getLogger(__name__)

        @torch.compiler.disable
        def record(name, value):
            pass

        @torch.compile
        def printed(x):
            start = time.perf_counter()
            y = x * 2
            print("took", time.perf_counter() - start)
            return y

        @torch.compile
        def logged(x):
            start = time.perf_counter()
            logger.info("took %f", time.perf_counter() - start)
            return x

        @torch.compile
        def scaled(x):
            start = time.perf_counter()
            return x * (time.perf_counter() - start)

        @torch.compile
        def after_item(x):
            t0 = time.time()
            m = x.mean().item()
            dt = time.time() - t0
            record("b", dt)
            return x * m

        @torch.compile
        def symbolic(x):
            start = time.perf_counter()
            y = x * 2
            if time.perf_counter() - start > 100.0:
                y = y + 1
            ms = round((time.perf_counter() - start) * 1e3, 2)
            return y, ms, time.perf_counter() - start

        @torch.compile
        def handed_on(x):
            start = time.perf_counter()
            y = x * 2
            record("a", start)
            return y

        @torch.compile
        def read_first(x):
            start = time.perf_counter()
            y = x * 2
            dt = start - time.perf_counter()
            record("c", dt)
            return y
        ''') == [(13, "FL121"), (15, "FL110"), (15, "FL121"), (15, "FL302"),
                 (20, "FL121"), (21, "FL111"), (21, "FL121"), (21, "FL302"),
                 (26, "FL121"), (27, "FL121"), (27, "FL302"),
                 (31, "FL121"), (32, "FL102"), (33, "FL121"), (33, "FL302"), (34, "FL130"),
                 (39, "FL121"), (41, "FL121"), (41, "FL302"), (43, "FL121"), (43, "FL302"), (44, "FL121"),
                 (48, "FL121"), (50, "FL130"),
                 (55, "FL121"), (57, "FL121"), (58, "FL130")]


def test_round_26_fixes():
    # Each as Dynamo 2.13 judged the round-26 fixtures (line in the comment).
    # diffusion_policy:272: an offset drawn by random.randint on the training path only is still
    # a random value after the branches merge; arithmetic on it breaks (GB0213), and as a slice
    # bound it is a graph input, not a tensor read.
    assert findings('''\
        import random
        import torch
        from torch import nn

        class Crop(nn.Module):
            def forward(self, x):
                if self.training:
                    top = random.randint(0, 4)
                else:
                    top = 2
                return x[..., top:top + 8]
        ''') == [(11, "FL124"), (11, "FL150")]
    # distillation_nlp:478: math.sqrt of an array Dynamo traces as a tensor reads its value (GB0033).
    assert findings('''\
        import math
        import numpy as np
        import torch

        @torch.compile
        def rank_agreement(s):
            a = s.detach().cpu().numpy()
            return torch.as_tensor(math.sqrt((a ** 2).sum()))
        ''') == [(8, "FL104")]
    # export_table_structure:407: `callbacks=(_check_header,)` left at its default runs the function.
    assert findings('''\
        import torch
        from torch import nn

        def _check(table):
            if not table["header"].any():
                pass

        class Decoder(nn.Module):
            def __init__(self, callbacks=(_check,)):
                super().__init__()
                self.callbacks = list(callbacks)

            def forward(self, x):
                for cb in self.callbacks:
                    cb({"header": x > 0})
                return x
        ''') == [(5, "FL101"), (15, "FL150")]
    # export_table_structure:298: `labels[i]` with `i` counting over a size picks a row, not a 0-d index.
    assert findings('''\
        import torch

        @torch.compile
        def pick(probs, thresholds):
            scores, labels = probs.max(-1)
            return [scores[i] >= thresholds[labels[i]] for i in range(probs.shape[0])]
        ''') == [(6, "FL301")]  # the comprehension over a size is unrolled (see above), nothing breaks
