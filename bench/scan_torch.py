"""Scans every .py file of the installed torch package with the analyzer.

Issue 2's bar: zero exceptions over the whole package. Two passes:
  1. `analyze_paths` over the package (what `fuselens check` runs), and
  2. `Workspace.analyze_file` file by file (the language server's path).
Prints files, findings, problems, exceptions and the time of each pass; exits 1 when any
file raised. torch is located with importlib (never imported: the scan must not depend on
torch being importable, only on its sources being on disk).

    python bench/scan_torch.py [--subdir nn] [--pass paths|workspace|cli|both|all] [--limit N]
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
import traceback
from pathlib import Path

from fuselens.analysis import Config, Workspace, analyze_paths
from fuselens.analysis.workspace import iter_python_files


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def scan_paths(folder: Path, config: Config) -> dict:
    """analyze_paths over the whole folder, exactly as `fuselens check FOLDER` runs it. If it
    raises, the folder is scanned again one sub-folder at a time to say where."""
    started = time.perf_counter()
    try:
        reports = analyze_paths([str(folder)], config)
        exceptions = []
    except Exception:  # noqa: BLE001 - the point is to count them
        reports, exceptions = [], [(str(folder), traceback.format_exc())]
        units = sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__")
        for unit in units + sorted(p for p in folder.iterdir() if p.suffix == ".py"):
            try:
                reports += analyze_paths([str(unit)], config)
            except Exception:  # noqa: BLE001
                exceptions.append((str(unit), traceback.format_exc()))
    return {"files": sum(1 for report in reports if report.path.startswith(str(folder))),
            "findings": sum(len(report.findings) for report in reports),
            "problems": sum(len(report.problems) for report in reports),
            "exceptions": exceptions, "seconds": time.perf_counter() - started}


def scan_workspace(folder: Path, config: Config, limit: int | None = None) -> dict:
    """Workspace.analyze_file on each file with one shared Workspace (caches kept), rooted
    at the torch folder as `fuselens check torch/` is, so relative imports resolve."""
    started = time.perf_counter()
    workspace = Workspace([torch_root()], config)
    files = findings = problems = 0
    exceptions = []
    slowest = (0.0, "")
    for path in iter_python_files([str(folder)]):
        if limit is not None and files >= limit:
            break
        files += 1
        one = time.perf_counter()
        try:
            report = workspace.analyze_file(path)
        except Exception:  # noqa: BLE001
            exceptions.append((path, traceback.format_exc()))
            continue
        slowest = max(slowest, (time.perf_counter() - one, path))
        findings += len(report.findings)
        problems += len(report.problems)
    return {"files": files, "findings": findings, "problems": problems, "exceptions": exceptions,
            "seconds": time.perf_counter() - started, "slowest": slowest}


def print_result(name: str, result: dict) -> None:
    print(f"{name}: {result['files']} files, {result['findings']} findings, {result['problems']} problems, "
          f"{len(result['exceptions'])} exceptions, {result['seconds']:.1f} s")
    if "slowest" in result:
        seconds, path = result["slowest"]
        print(f"    slowest file: {path} ({seconds * 1000:.0f} ms)")
    # Group by where the exception was raised: one bug usually fails many files.
    groups: dict[str, list[str]] = {}
    for where, trace in result["exceptions"]:
        tail = [line for line in trace.strip().splitlines() if line.strip() and not set(line.strip()) <= {"^", "~"}]
        groups.setdefault("\n".join(tail[-3:]), []).append(where)
    for tail, wheres in groups.items():
        print(f"--- {len(wheres)} x, e.g. {wheres[0]}\n{tail}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subdir", help="scan only this folder of torch (e.g. nn, _dynamo)")
    parser.add_argument("--pass", dest="which", choices=["paths", "workspace", "cli", "both", "all"], default="both",
                        help="both = paths + workspace; all adds a real `fuselens check` subprocess")
    parser.add_argument("--limit", type=int, help="at most this many files in the workspace pass")
    args = parser.parse_args(argv)
    folder = torch_root() / args.subdir if args.subdir else torch_root()
    config = Config()
    total = sum(1 for _ in iter_python_files([str(folder)]))
    size = sum(Path(p).stat().st_size for p in iter_python_files([str(folder)]))
    import fuselens.analysis

    print(f"analyzer: {fuselens.analysis.__file__}")
    print(f"scanning {folder}: {total} .py files, {size / 1e6:.1f} MB")
    failed = False
    if args.which in ("paths", "both", "all"):
        result = scan_paths(folder, config)
        print_result("analyze_paths (fuselens check)", result)
        failed |= bool(result["exceptions"])
    if args.which in ("workspace", "both", "all"):
        result = scan_workspace(folder, config, args.limit)
        print_result("Workspace.analyze_file (language server)", result)
        failed |= bool(result["exceptions"])
    if args.which in ("cli", "all"):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "fuselens", "check", str(folder), "--format", "json",
                               "--exit-zero"], capture_output=True, text=True)
        crashed = "Traceback" in done.stderr
        print(f"fuselens check (subprocess): exit {done.returncode}, {time.perf_counter() - started:.1f} s, "
              f"{'CRASHED: ' + done.stderr.strip().splitlines()[-1] if crashed else 'no traceback'}")
        failed |= crashed or done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
