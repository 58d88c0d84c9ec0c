"""The Workspace's incremental path (what the language server calls on every keystroke):
after each edit the result equals a fresh analysis, edits reach dependent functions (in
the same file and across files), and an edit inside one function re-walks only that one.
"""
from __future__ import annotations

import textwrap

import pytest

from fuselens.analysis import Workspace, analyze_source, checker

PATH = "<mem>/model.py"

MODEL = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    def helper(x):
        return x.sum()


    def shout(x):
        return x


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.scale = 2.0
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            if self.scale > 1:
                x = x * self.scale
            if helper(x) > 0:
                x = -x
            return shout(self.proj(x))


    @torch.compile
    def step(x):
        y = x + 1
        return shout(y)
    ''')


def key(report):
    return sorted((f.code, f.span.line, f.span.column, f.span.end_line, f.span.end_column, f.message, f.function)
                  for f in report.findings)


def found(report):
    return sorted((f.span.line, f.code, f.function) for f in report.findings)


def problems(report):
    return [(p.span.line, p.message) for p in report.problems]


class Session:
    """One Workspace fed successive texts; every result is checked against a fresh analysis."""

    def __init__(self, text: str):
        self.workspace = Workspace()
        self.text = text
        self.analyse(text)

    def analyse(self, text: str):
        report = self.workspace.analyze_file(PATH, text)
        fresh = Workspace().analyze_file(PATH, text)
        assert key(report) == key(fresh), "incremental result differs from a fresh one"
        assert problems(report) == problems(fresh), "incremental problems differ from a fresh analysis's"
        self.text, self.report = text, report
        return report

    def replace(self, old: str, new: str):
        assert old in self.text, old
        return found(self.analyse(self.text.replace(old, new, 1)))


def test_baseline():
    # Block.forward branches on helper(x) > 0, a tensor: the one finding of MODEL.
    assert found(Session(MODEL).report) == [(22, "FL101", "Block.forward")]


def test_callee_return_type_change_reaches_the_caller():
    session = Session(MODEL)
    assert session.replace("return x.sum()", "return 1") == []           # a Python int now
    assert session.replace("    return 1\n", "    return x.max()\n") == [(22, "FL101", "Block.forward")]


def test_callee_gaining_a_break_reports_it_in_the_callee():
    session = Session(MODEL)
    result = session.replace("def shout(x):\n    return x", "def shout(x):\n    print(x)\n    return x")
    assert (10, "FL110", "shout") in result
    # And removing it again removes the finding.
    assert session.replace("    print(x)\n", "") == [(22, "FL101", "Block.forward")]


def test_init_attribute_type_change_reaches_forward():
    session = Session(MODEL)
    assert session.replace("self.scale = 2.0", "self.scale = nn.Parameter(torch.ones(1))") == [
        (20, "FL101", "Block.forward"), (22, "FL101", "Block.forward")]
    assert session.replace("self.scale = nn.Parameter(torch.ones(1))", "self.scale = 3") == [
        (22, "FL101", "Block.forward")]


def test_disabling_a_callee_breaks_the_caller():
    session = Session(MODEL)
    result = session.replace("def shout(x):", "@torch.compiler.disable\ndef shout(x):")
    assert (25, "FL130", "Block.forward") in result and (31, "FL130", "step") in result


def test_deleting_and_restoring_a_function():
    session = Session(MODEL)
    session.replace("def helper(x):\n    return x.sum()\n", "")
    assert all(finding[2] != "helper" for finding in found(session.report))
    assert found(session.analyse(MODEL)) == [(22, "FL101", "Block.forward")]


def test_lines_inserted_above_shift_everything_below():
    session = Session(MODEL)
    assert session.replace("def helper(x):\n", "def helper(x):\n    # a comment\n") == [
        (23, "FL101", "Block.forward")]
    assert session.replace("import torch\n", "import torch\n\n\n") == [(25, "FL101", "Block.forward")]
    assert session.replace("\n\n\nimport torch.nn", "\nimport torch.nn") == [(23, "FL101", "Block.forward")]


def test_syntax_error_and_back():
    session = Session(MODEL)
    session.replace("x = x * self.scale", "x = x * (self.scale")  # Block.forward unparsable
    assert all(finding[2] != "Block.forward" for finding in found(session.report))
    assert session.report.problems
    session.replace("x = x * (self.scale", "x = x * self.scale")
    assert found(session.report) == [(22, "FL101", "Block.forward")] and session.report.problems == []


def test_typing_a_function_char_by_char():
    addition = "\n\n@torch.compile\ndef late(x):\n    if x.mean() > 0:\n        print(x)\n    return x\n"
    session = Session(MODEL)
    for end in range(1, len(addition) + 1):
        session.analyse(MODEL + addition[:end])
    assert found(session.report) == [(22, "FL101", "Block.forward"), (35, "FL101", "late"), (36, "FL110", "late")]


def test_across_files(tmp_path):
    (tmp_path / "layers.py").write_text("def act(x):\n    return x * 2\n")
    (tmp_path / "model.py").write_text(
        "import torch\nfrom layers import act\n\n\n@torch.compile\ndef run(x):\n    return act(x)\n")
    main, layers = str(tmp_path / "model.py"), str(tmp_path / "layers.py")
    workspace = Workspace([tmp_path])

    def check(expected):
        fresh = Workspace([tmp_path])
        for path, text in workspace._texts.items():
            fresh.set_text(path, text)
        # analyze() files each finding under the file it occurs in (analyze_file(main) would
        # keep only main's own).
        reports = workspace.analyze([main, layers])
        assert [key(report) for report in reports] == [key(report) for report in fresh.analyze([main, layers])]
        assert sorted((f.span.line, f.code, f.function) for r in reports for f in r.findings) == expected

    check([])
    # The open document (unsaved) overrides the disk.
    workspace.set_text(layers, "def act(x):\n    print(x)\n    return x * 2\n")
    check([(2, "FL110", "act")])
    workspace.set_text(layers, "import time\n\n\ndef act(x):\n    time.sleep(0.1)\n    return x * 2\n")
    check([(5, "FL121", "act")])
    # Closing it without saving: back to what is on disk.
    workspace.forget_text(layers)
    check([])


def test_one_line_edit_rewalks_only_that_function(monkeypatch):
    """The per-function cache: after a one-line edit inside one function body, only that
    function is walked again (timings are bench/analysis_bench.py's job; this is exact)."""
    functions = "".join(
        f"\n\nclass Layer{i}(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        f"        self.proj = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        y = self.proj(x)\n"
        f"        return torch.relu(y) * {i}\n" for i in range(30))
    text = MODEL + functions
    walks = []
    original = checker.FunctionWalker.run
    monkeypatch.setattr(checker.FunctionWalker, "run", lambda self: walks.append(self.function.qualname)
                        or original(self))
    workspace = Workspace()
    workspace.analyze_file(PATH, text)
    assert len(walks) > 30  # the cold pass walked every forward
    for i in (3, 17, 29):
        walks.clear()
        text = text.replace(f"torch.relu(y) * {i}\n", f"torch.relu(y) * {i + 100}\n")
        workspace.analyze_file(PATH, text)
        assert walks == [f"Layer{i}.forward"]
    # A body edit in a helper re-walks it and its callers' walks only if its result changed.
    walks.clear()
    text = text.replace("def shout(x):\n    return x\n", "def shout(x):\n    return (x)\n")
    workspace.analyze_file(PATH, text)
    assert set(walks) <= {"shout", "Block.forward", "step"} and "shout" in walks


def test_class_attribute_types_follow_a_line_shift():
    """Attribute types were once cached by module-level (path, class) keys and handed out
    class references of an earlier text: findings at the old lines."""
    text = textwrap.dedent('''\
        import torch.nn as nn


        class Inner(nn.Module):
            def forward(self, x, mask=None):
                print(x)
                return x


        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()

            def forward(self, x):
                return self.inner(x, x > 0)
        ''')
    assert found(analyze_source(text, PATH)) == [(6, "FL110", "Inner.forward")]
    # Two fresh analyses in a row; the second text is the first one line lower.
    assert found(analyze_source("\n" + text, PATH)) == [(7, "FL110", "Inner.forward")]


def test_attribute_stores_follow_edits_to_the_method_that_stores_and_the_one_that_reads():
    # FL302 at a store in a method forward calls holds only while compiled code reads the
    # attribute before it: an edit to either method changes the finding.
    session = Session(textwrap.dedent('''\
        import torch.nn as nn


        class Adapter(nn.Module):
            def __init__(self):
                super().__init__()
                self.merged = False

            def merge(self):
                self.merged = True

            def forward(self, x):
                if not self.merged:
                    self.merge()
                return x * 2
        '''))
    assert found(session.report) == [(10, "FL302", "Adapter.merge")]
    assert session.replace("if not self.merged:\n            self.merge()", "self.merge()\n        if self.merged:\n"
                           "            x = x + 1") == []  # read after the store: no guard
    assert session.replace("        if self.merged:\n            x = x + 1\n", "") == []
    assert session.replace("self.merge()\n", "if not self.merged:\n            self.merge()\n") == [
        (10, "FL302", "Adapter.merge")]
    assert session.replace("self.merged = True", "pass") == []


def test_problems_depend_only_on_the_text():
    """Lazy parsing reports a syntax error only in what the analysis reads; that must not
    depend on what an earlier analysis read (once it took Net's attributes from a cache
    and never parsed __init__)."""
    text = textwrap.dedent('''\
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self, dim):
                super().__init__()
                if dim > 0:
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x)
        ''')
    first = [p.message for p in analyze_source(text, PATH).problems]
    assert first and "expected an indented block" in first[0]
    assert [p.message for p in analyze_source(text, PATH).problems] == first


def test_analyze_source_reuses_a_workspace_but_reads_other_files_again(tmp_path):
    """analyze_source (what the language server calls per keystroke) keeps a Workspace per
    folder, yet gives what a new one gives: other files as they are on disk now."""
    main, helpers = tmp_path / "main.py", tmp_path / "helpers.py"
    text = ("import torch\nfrom helpers import act\nfrom extra import more\n\n\n@torch.compile\ndef run(x):\n"
            "    if act(x) > 0:\n        x = -x\n    if more(x) > 0:\n        x = x * 2\n    return x\n")

    def lines():
        report = analyze_source(text, str(main))
        assert key(report) == key(Workspace([tmp_path]).analyze_file(str(main), text))
        return [finding.span.line for finding in report.findings]

    helpers.write_text("def act(x):\n    return x.sum()\n")
    assert lines() == [8]  # act returns a tensor; `more` resolves to nothing
    helpers.write_text("def act(x):\n    return 1\n")
    assert lines() == []
    (tmp_path / "extra.py").write_text("def more(x):\n    return x.mean()\n")
    assert lines() == [10]  # a file that appeared
    # Another file's unsaved text analysed in between is not what main.py sees.
    analyze_source("def act(x):\n    return x.max()\n", str(helpers))
    assert lines() == [10]


DECORATED = textwrap.dedent('''\
    import functools
    import time
    import torch

    LOSSES = {}


    def register(name):
        def deco(fn):
            LOSSES[name] = fn
            return fn
        return deco


    def timed(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = time.time()
            return fn(*args, **kwargs)
        return wrapper


    @register("l1")
    def l1(pred, target):
        return (pred - target).abs().mean()


    @torch.compile
    @timed
    def step(pred, target, name: str):
        return LOSSES[name](pred, target)
    ''')


def test_decorator_wrappers_and_registries_follow_edits():
    # The compiled function is timed's wrapper (its time.time() breaks); the registry call walks l1.
    session = Session(DECORATED)
    assert found(session.report) == [(18, "FL121", "timed.wrapper")]
    # A break added to the registered loss is found through LOSSES[name]; taking the decorator
    # off the root removes the wrapper's break.
    assert session.replace("    return (pred - target).abs().mean()",
                           "    return (pred - target).abs().mean().item()") == [
        (18, "FL121", "timed.wrapper"), (25, "FL102", "l1")]
    assert session.replace("@torch.compile\n@timed\n", "@torch.compile\n") == [(25, "FL102", "l1")]


PIPELINE = textwrap.dedent('''\
    import torch


    class Shout:
        def __call__(self, x):
            print(x)
            return x


    class Compose:
        def __init__(self, transforms):
            self.transforms = list(transforms)

        def __call__(self, x):
            for t in self.transforms:
                x = t(x)
            return x


    PIPE = Compose([Shout()])


    @torch.compile
    def run(x):
        return PIPE(x)
    ''')


def test_instance_attributes_follow_the_constructor_they_came_from():
    # PIPE holds a Shout because Compose.__init__ stored its argument: editing that __init__
    # (not the root, not Shout) changes what run() reaches.
    session = Session(PIPELINE)
    assert found(session.report) == [(6, "FL110", "Shout.__call__"), (16, "FL150", "Compose.__call__")]
    assert session.replace("self.transforms = list(transforms)", "self.transforms = []") == []
    assert session.replace("self.transforms = []", "self.transforms = list(transforms)") == [
        (6, "FL110", "Shout.__call__"), (16, "FL150", "Compose.__call__")]


HOOKED = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    def shout(y):
        print(y)


    class Net(nn.Module):
        def __init__(self, hooks=None):
            super().__init__()
            self.hooks = list(hooks or [])

        def forward(self, x):
            for hook in self.hooks:
                hook(x)
            return x * 2


    CASES = {"plain": lambda: (Net(), (torch.randn(3),)), "hooked": lambda: (Net(hooks=[shout]), (torch.randn(3),))}
    ''')


def test_a_module_built_at_module_level_with_code_runs_that_code():
    # Net's forward is a root twice: as Net() (no hooks) and as the instance built with
    # hooks=[shout], whose loop calls shout. Editing the __init__ that stores the hooks, or the
    # construction, changes what the second root reaches.
    session = Session(HOOKED)
    assert found(session.report) == [(6, "FL110", "shout"), (16, "FL150", "Net.forward")]
    assert session.replace("self.hooks = list(hooks or [])", "self.hooks = []") == []
    assert session.replace("self.hooks = []", "self.hooks = list(hooks or [])") == [
        (6, "FL110", "shout"), (16, "FL150", "Net.forward")]
    assert session.replace("Net(hooks=[shout])", "Net(hooks=[])") == []


CALLED_WITH_CODE = textwrap.dedent('''\
    import torch


    def log_metric(name, value):
        print(name, float(value.sum()))


    @torch.compile
    def evaluate(x, callbacks=()):
        y = x * 2
        for cb in callbacks:
            cb("y", y)
        return y


    if __name__ == "__main__":
        evaluate(torch.rand(3), callbacks=[log_metric])
    ''')


def test_a_compiled_function_called_at_module_level_with_code_runs_that_code():
    # evaluate is a root twice: as declared (no callbacks) and as the module-level call hands it
    # log_metric, whose print and float() break (measured on 2.13 with that call: GB0124 there).
    # Editing the call, or the callee's body, changes what the second root reaches.
    session = Session(CALLED_WITH_CODE)
    both = [(5, "FL102", "log_metric"), (5, "FL110", "log_metric"), (12, "FL150", "evaluate")]
    assert found(session.report) == both
    assert session.replace("callbacks=[log_metric])", "callbacks=[])") == []
    assert session.replace("callbacks=[])", "callbacks=[log_metric])") == both
    assert session.replace("print(name, float(value.sum()))", "return name") == []


TRACED_WITH_A_LOCAL_CONFIG = textwrap.dedent('''\
    import torch
    from torch import nn

    LITE = False


    class Head(nn.Module):
        def __init__(self, recurrent):
            super().__init__()
            self.rnn = nn.LSTM(4, 4) if recurrent else nn.Identity()

        def forward(self, x):
            return self.rnn(x)


    def export_head(x):
        cfg = LITE
        return torch.jit.trace(Head(cfg), (x,))
    ''')


def test_a_traced_construction_follows_edits_to_the_local_it_is_handed():
    # `cfg` is a local of export_head: editing what it is bound to changes which module the
    # trace root holds (the LSTM checks sizes in Python: FL203 under trace).
    session = Session(TRACED_WITH_A_LOCAL_CONFIG)
    traced = lambda result: [f for f in result if f[1].startswith("FL2")]  # noqa: E731
    assert traced(found(session.report)) == []
    assert traced(session.replace("cfg = LITE", "cfg = not LITE")) == [(13, "FL203", "Head.forward")]
    assert traced(session.replace("cfg = not LITE", "cfg = LITE")) == []
