"""Scores the static analyzer against the Dynamo-verified corpus (tests/corpus).

    python bench/corpus_score.py [FILES...] [--json]

Granularity is the line: for each category (graph-break, trace-unsafe, recompile) a
(file, line) is expected when some annotation of that category sits on it, and predicted when
the analyzer reports a finding of that category there. Matching lines whose rule ids differ are
listed as "code mismatches" (they still count as hits). FL301 is judged only for roots a case
runs with a second set of shapes, so FL301 findings on unannotated lines of other roots are
counted apart, as unjudged, not as false positives; so are findings on lines no case executes
(tests/corpus/unexercised.json, kept current by the oracle): Dynamo says nothing about them.
Does not import torch.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from dynamo_oracle import CATEGORIES, category_of, corpus_files, load_unexercised, parse_expectations  # noqa: E402

Key = tuple[str, int]  # (file name, line)


@dataclass
class CategoryScore:
    expected: dict[Key, set[str]] = field(default_factory=dict)  # line -> rule ids
    predicted: dict[Key, set[str]] = field(default_factory=dict)

    @property
    def hits(self) -> set[Key]:
        return self.expected.keys() & self.predicted.keys()

    @property
    def false_positives(self) -> list[Key]:
        return sorted(self.predicted.keys() - self.expected.keys())

    @property
    def false_negatives(self) -> list[Key]:
        return sorted(self.expected.keys() - self.predicted.keys())

    @property
    def precision(self) -> float:
        return len(self.hits) / len(self.predicted) if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return len(self.hits) / len(self.expected) if self.expected else 1.0

    @property
    def code_mismatches(self) -> list[Key]:
        return sorted(k for k in self.hits if self.expected[k] != self.predicted[k])


def _category(code: str, rules) -> str | None:
    rule = rules.get(code)
    if rule is not None:
        return rule.category if rule.category in CATEGORIES else None
    try:
        return category_of(code)
    except (ValueError, IndexError):
        return None


def _roots_run_with_other_shapes(source: str) -> set[str]:
    """Names of the roots some CASES entry runs with a second set of shapes (`args2`): only there
    does the oracle judge FL301 (see tests/dynamo_oracle.py)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASES" for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            for case in node.value.values:
                body = case.body if isinstance(case, ast.Lambda) else None
                if isinstance(body, ast.Tuple) and len(body.elts) == 3:
                    root = body.elts[0].func if isinstance(body.elts[0], ast.Call) else body.elts[0]
                    names.add(ast.unparse(root).rsplit(".", 1)[-1])
    return names


SHAPES_NOT_VARIED = "FL301 findings in roots no case runs with other shapes"
NOT_EXECUTED = "findings on lines no case executes"


def score(files=None) -> tuple[dict[str, CategoryScore], dict[str, int]]:
    """Runs the analyzer over the corpus: one CategoryScore per category, and how many findings
    were left unjudged, by reason: FL301 on unannotated lines of roots no case runs with other
    shapes (a finding reached from several roots names one of them), and findings on lines no
    case executes."""
    from fuselens.analysis import RULES, analyze_source

    scores = {category: CategoryScore() for category in CATEGORIES}
    unjudged = {SHAPES_NOT_VARIED: 0, NOT_EXECUTED: 0}
    unexercised = load_unexercised()
    for path in files or corpus_files():
        path = Path(path).resolve()
        for expect in parse_expectations(path):
            scores[expect.category].expected.setdefault((path.name, expect.line), set()).add(expect.code)
        source = path.read_text()
        varied = _roots_run_with_other_shapes(source)
        not_executed = set(unexercised.get(path.name, ()))
        report = analyze_source(source, str(path))
        for finding in report.findings:
            if Path(finding.path).resolve() != path:
                continue  # a finding in another file: that file is scored on its own
            root = (finding.chain[0].function if finding.chain else finding.function).split(".")[0]
            key = (path.name, finding.span.line)
            category = _category(finding.code, RULES)
            if category is None:
                continue
            if key in scores[category].expected:
                scores[category].predicted.setdefault(key, set()).add(finding.code)
            elif finding.span.line in not_executed:
                unjudged[NOT_EXECUTED] += 1
            elif finding.code == "FL301" and root not in varied:
                unjudged[SHAPES_NOT_VARIED] += 1
            else:
                scores[category].predicted.setdefault(key, set()).add(finding.code)
    return scores, unjudged


def _codes(codes: set[str]) -> str:
    return ",".join(sorted(codes))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    options = parser.parse_args(argv)
    started = time.perf_counter()
    scores, unjudged = score(options.files or None)
    elapsed = time.perf_counter() - started

    if options.json:
        print(json.dumps({
            category: {
                "precision": s.precision, "recall": s.recall, "expected": len(s.expected),
                "predicted": len(s.predicted), "hits": len(s.hits),
                "false_positives": [f"{f}:{l}" for f, l in s.false_positives],
                "false_negatives": [f"{f}:{l}" for f, l in s.false_negatives],
            } for category, s in scores.items()} | {"unjudged": unjudged}, indent=2))
        return 0

    print(f"{'category':<14}{'precision':>10}{'recall':>8}{'expected':>10}{'predicted':>11}{'hits':>6}")
    for category, s in scores.items():
        print(f"{category:<14}{s.precision:>10.3f}{s.recall:>8.3f}{len(s.expected):>10}"
              f"{len(s.predicted):>11}{len(s.hits):>6}")
    for category, s in scores.items():
        if s.false_positives:
            print(f"\n{category}: false positives (reported, Dynamo disagrees)")
            for key in s.false_positives:
                print(f"  {key[0]}:{key[1]}  {_codes(s.predicted[key])}")
        if s.false_negatives:
            print(f"\n{category}: false negatives (missed)")
            for key in s.false_negatives:
                print(f"  {key[0]}:{key[1]}  {_codes(s.expected[key])}")
        if s.code_mismatches:
            print(f"\n{category}: right line, other rule (expected -> reported)")
            for key in s.code_mismatches:
                print(f"  {key[0]}:{key[1]}  {_codes(s.expected[key])} -> {_codes(s.predicted[key])}")
    print()
    for reason, count in unjudged.items():
        print(f"not scored: {count} {reason}")
    print(f"analysed {len(options.files or corpus_files())} files in {elapsed:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
