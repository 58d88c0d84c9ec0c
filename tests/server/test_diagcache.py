"""The diagnostics cache gives exactly what a fresh conversion gives, edit after edit (including
lines that turn non-ASCII, whose columns depend on the text)."""
from __future__ import annotations

import json

from lsp_harness import SAMPLE
from pygls.protocol import default_converter

from fuselens.analysis import analyze_source
from fuselens.server import convert, diagcache

PATH = "/ws/model.py"
URI = "file:///ws/model.py"


def fresh(report, positions, version):
    converter = default_converter()
    diagnostics = [convert.finding_to_diagnostic(f, positions, document_uri=URI, document_path=PATH, version=version,
                                                 severity_overrides={}) for f in report.findings]
    diagnostics += [convert.problem_to_diagnostic(p, positions) for p in report.problems]
    return [converter.unstructure(d) for d in diagnostics]


def test_cached_conversion_equals_a_fresh_one_across_edits():
    cache = diagcache.Converted()
    texts = [SAMPLE, "# edit\n" + SAMPLE, SAMPLE.replace('print("hi")', 'print("hé")'),
             SAMPLE.replace("z = y.item()", "z = y.item()  # ü"), SAMPLE + "\ndef broken(:\n"]
    reused = 0
    for version, text in enumerate(texts, start=1):
        report = analyze_source(text, PATH)
        positions = convert.Positions(text)
        before = dict(cache.entries)
        diagnostics, items = cache.convert(report, positions, uri=URI, path=PATH, version=version, overrides={})
        reused += sum(1 for f in report.findings if f in before and before[f] is cache.entries.get(f))
        expected = fresh(report, positions, version)
        assert [json.loads(item) for item in items] == expected
        for diagnostic, want in zip(diagnostics, expected):  # the objects carry no version
            got = default_converter().unstructure(diagnostic)
            if "data" in want:
                got["data"] = {**got["data"], "version": version}
            assert got == want
    assert reused > 0  # the point of it
