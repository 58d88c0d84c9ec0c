from pathlib import Path

from fuselens.analysis import RULES
from fuselens.cli import rules_markdown


def test_rules_doc_is_current():
    doc = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    assert doc.read_text(encoding="utf-8") == rules_markdown(), "run: fuselens rules --markdown > docs/rules.md"


def test_every_rule_links_to_its_section():
    text = rules_markdown()
    for rule in RULES.values():
        assert f"\n## {rule.code}\n" in text and rule.url.endswith("#" + rule.code.lower())
