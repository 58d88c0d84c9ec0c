"""`fuselens` command line: check files, list rules, serve the editor."""
from __future__ import annotations

import argparse
import io
import json
import sys
import time
import tokenize
from pathlib import Path

from fuselens.analysis import RULES, ConfigError, Finding, Report, apply_edits, decode_source, load_config
from fuselens.analysis.workspace import analyze_paths

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 on usage errors, as we want; keep its message
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"fuselens: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fuselens", description="See where torch.compile breaks your graph, without running it.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = commands.add_parser("check", help="analyse files or folders")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=["text", "json"], default="text")
    check.add_argument("--select", help="comma-separated rule ids, names or prefixes to report (e.g. FL1,print)")
    check.add_argument("--ignore", help="comma-separated rule ids, names or prefixes to skip")
    check.add_argument("--no-modules", action="store_true",
                       help="don't treat every nn.Module.forward as compiled; only declared roots")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--fix", action="store_true", help="apply the mechanical fixes in place")
    check.add_argument("--statistics", action="store_true", help="print the analysis time to stderr")
    commands.add_parser("rules", help="list the rules")
    serve = commands.add_parser("serve", help="run the language server (stdio)")
    serve.add_argument("serve_args", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "rules":
        for rule in RULES.values():
            gb = f" ({rule.gb_id})" if rule.gb_id else ""
            print(f"{rule.code}  {rule.category:<12} {rule.name:<24} {rule.summary}{gb}")
        return EXIT_CLEAN
    if args.command == "serve":
        from fuselens.server.cli import main as serve_main

        return serve_main(args.serve_args)
    return check(args)


def check(args) -> int:
    missing = [path for path in args.paths if not Path(path).exists()]
    if missing:
        print(f"fuselens: error: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = load_config(Path(args.paths[0]))
        config = config.with_overrides(
            select=_split(args.select), ignore=_split(args.ignore),
            **({"assume_modules_compiled": False} if args.no_modules else {}))
    except (ConfigError, ValueError) as error:
        print(f"fuselens: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    started = time.perf_counter()
    reports = analyze_paths(args.paths, config)
    elapsed = time.perf_counter() - started
    if args.fix and apply_fixes(reports):
        reports = analyze_paths(args.paths, config)  # report what is left
    findings = [finding for report in reports for finding in report.findings]
    if args.format == "json":
        json.dump([finding_json(finding) for finding in findings], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_text(reports, findings)
    for report in reports:
        for problem in report.problems:
            print(f"{problem.path}: warning: {problem.message}", file=sys.stderr)
    if args.statistics:
        print(f"analysed {len(reports)} files in {elapsed * 1000:.1f} ms", file=sys.stderr)
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def apply_fixes(reports: list[Report]) -> int:
    """Writes each file's fixes back (one fix per statement: overlapping ones wait for a rerun)."""
    fixed = 0
    for report in reports:
        edits, taken = [], []
        for finding in report.findings:
            if finding.fix is None:
                continue
            spans = [(e.span.line, e.span.end_line) for e in finding.fix.edits]
            if any(a <= d and c <= b for a, b in spans for c, d in taken):
                continue
            taken.extend(spans)
            edits.extend(finding.fix.edits)
        if edits:
            path = Path(report.path)
            data = path.read_bytes()
            encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]  # keep the file's encoding
            path.write_bytes(apply_edits(decode_source(data, report.path), edits).encode(encoding))
            print(f"fixed {len(taken)} finding(s) in {report.path}", file=sys.stderr)
            fixed += 1
    return fixed


def _split(value: str | None):
    return [part for part in value.split(",") if part.strip()] if value else None


def finding_json(finding: Finding) -> dict:
    rule = finding.rule
    return {
        "path": finding.path,
        "line": finding.span.line,
        "column": finding.span.column,
        "end_line": finding.span.end_line,
        "end_column": finding.span.end_column,
        "code": finding.code,
        "name": rule.name,
        "category": rule.category,
        "gb_id": rule.gb_id,
        "gb_type": rule.gb_type,
        "message": finding.message,
        "why": rule.why,
        "hint": rule.fix_hint,
        "function": finding.function,
        "chain": [{"path": site.path, "line": site.span.line, "column": site.span.column,
                   "function": site.function} for site in finding.chain],
        "fix": None if finding.fix is None else {
            "title": finding.fix.title,
            "edits": [{"line": edit.span.line, "column": edit.span.column, "end_line": edit.span.end_line,
                       "end_column": edit.span.end_column, "new_text": edit.new_text}
                      for edit in finding.fix.edits]},
    }


def print_text(reports: list[Report], findings: list[Finding]) -> None:
    for finding in findings:
        rule = finding.rule
        gb = f" [{rule.gb_id}]" if rule.gb_id and rule.category == "graph-break" else ""
        print(f"{finding.path}:{finding.span.line}:{finding.span.column + 1}: {finding.code}{gb} "
              f"{finding.message}  ({rule.category}, in {finding.function})")
        for site in finding.chain:
            print(f"    reached from {site.function} at {site.path}:{site.span.line}")
        print(f"    hint: {rule.fix_hint}")
    fixable = sum(1 for finding in findings if finding.fix)
    files = len({finding.path for finding in findings})
    if findings:
        print(f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} in {files} "
              f"file{'s' if files != 1 else ''} ({fixable} with a mechanical fix; "
              f"{len(reports)} files checked).")
    else:
        print(f"All clear: {len(reports)} file{'s' if len(reports) != 1 else ''} checked, no findings.")


if __name__ == "__main__":
    sys.exit(main())
