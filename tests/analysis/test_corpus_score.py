"""The analyzer against the Dynamo-verified corpus: the issue's bar, at line granularity.

The corpus annotations are checked against real torch._dynamo by tests/test_corpus_dynamo.py;
this test holds the analyzer to them (precision and recall ≥ 0.95 for graph breaks and for
trace hazards).
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from corpus_score import score  # noqa: E402


@pytest.fixture(scope="module")
def scores():
    return score()[0]


@pytest.mark.parametrize("category", ["graph-break", "trace-unsafe"])
def test_precision_and_recall_meet_the_bar(scores, category):
    result = scores[category]
    assert len(result.expected) >= 10, "the corpus must exercise this category"
    hits = len(result.hits)
    precision = hits / max(len(result.predicted), 1)
    recall = hits / max(len(result.expected), 1)
    assert precision >= 0.95 and recall >= 0.95, (
        f"{category}: precision {precision:.3f}, recall {recall:.3f}; "
        f"false positives {result.false_positives}, false negatives {sorted(result.expected.keys() - result.predicted.keys())}")
