"""Files, module names and imports across a workspace; the analysis entry points.

A Workspace keeps the parsed blocks, module indexes and memoised function walks between
calls, so a language server re-analysing a file after a keystroke only redoes what the
edit touched. Files are read lazily: only those a compile root reaches through imports.
analyze_source keeps one Workspace per folder for the same reason (the language server
calls it on every keystroke), re-reading the other files as a new one would.

In a long-running process, call gc.freeze() once start-up is done: the objects alive then
(imported modules, the server's own) are never traversed again by full collections, which
an analysis's allocations would otherwise trigger now and then.
"""
from __future__ import annotations

import ast
import os
import threading
from collections import OrderedDict
from pathlib import Path

from .config import Config
from .edits import interface_text, reparse_blocks, update_index
from .findings import Report, SourceProblem
from .index import EXTERNAL_PREFIXES, ClassInfo, FunctionInfo, ModuleIndex, build_index
from .memo import Analysis, RootResult, merge_findings
from .source import SourceError, block_problems, decode_source, gc_paused, parse_blocks

MEMO_LIMIT = 50_000
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".tox", "build", "dist", ".mypy_cache",
             ".pytest_cache", ".hypothesis", "site-packages"}


class Workspace:
    def __init__(self, roots=(), config: Config | None = None):
        self.config = config or Config()
        self.roots = [Path(root).resolve() for root in roots]
        self._texts: dict[str, str] = {}  # open documents override the disk
        self._indexes: dict[str, tuple[str, ModuleIndex]] = {}  # path → (text, index)
        self._stale: set[str] = set()  # paths whose open text changed since they were indexed
        self._unreadable: dict[str, str] = {}
        self._interface_parts: dict[str, int] = {}  # block text → its share of the interface key
        self._module_files: dict[tuple, str | None] = {}  # (dotted module, folder) → file
        self._aliases: dict[str, str] = {}  # real path → the path it was first given as
        self._indexing: set[str] = set()  # files being indexed now: an import cycle stops here
        self._results: dict[tuple, RootResult] = {}  # (mode, path, qualname) of a root → its result
        self.memo: dict = {}
        # Bumped whenever a module's interface (anything but function bodies) changes: memoised
        # walks and root results from an earlier epoch may have read what changed.
        self.epoch = 0
        self.generation = 0  # bumped whenever any index changes at all

    # --- documents -----------------------------------------------------------------------------
    def set_text(self, path: str, text: str) -> None:
        path = str(path)
        self._given(path)
        self._texts[path] = text
        self._stale.add(path)

    def forget_text(self, path: str) -> None:
        self._texts.pop(str(path), None)
        self._stale.add(str(path))

    def text_of(self, path: str) -> str:
        if path in self._texts:
            return self._texts[path]
        return decode_source(Path(path).read_bytes(), path)

    def _given(self, path: str) -> None:
        """Remember how the caller names a file, so that a module reached through an import
        (found under a workspace root, as an absolute path) is filed under that same name."""
        if path not in self._aliases:
            self._aliases.setdefault(os.path.realpath(path), path)
            self._aliases[path] = path

    # --- indexes -------------------------------------------------------------------------------
    def module_name(self, path: str) -> str:
        resolved = Path(path).resolve()
        for root in self.roots:
            try:
                relative = resolved.relative_to(root)
            except ValueError:
                continue
            parts = list(relative.with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts)
        return resolved.stem

    def index(self, path: str, text: str | None = None) -> ModuleIndex:
        path = str(path)
        if text is None:
            text = self.text_of(path)
        cached = self._indexes.get(path)
        if cached is not None and cached[0] == text:
            return cached[1]
        self.generation += 1
        edit = reparse_blocks(cached[0], cached[1].blocks, text) if cached is not None else None
        if edit is not None and update_index(cached[1], text, *edit):
            self._indexes[path] = (text, cached[1])
            self._stale.discard(path)
            return cached[1]
        blocks = edit[0] if edit is not None else parse_blocks(text, lazy=True)
        self._indexing.add(path)
        try:
            module = build_index(path, self.module_name(path), text, blocks, self)
        finally:
            self._indexing.discard(path)
        module.interface_key = hash((tuple(self._interface_part(block) for block in blocks), module.body_effects()))
        if cached is not None and cached[1].interface_key != module.interface_key:
            self._new_epoch()
        self._indexes[path] = (text, module)
        self._stale.discard(path)
        return module

    def _new_epoch(self) -> None:
        self.epoch += 1
        self.memo.clear()
        self._results.clear()

    def _refresh(self) -> None:
        """Re-index the open documents edited since they were indexed, before a pass reads them."""
        for path in list(self._stale):
            self._stale.discard(path)
            if path in self._indexes:
                try:
                    self.index(path)
                except (OSError, SourceError) as error:
                    del self._indexes[path]
                    self._unreadable[path] = str(error)
                    self._new_epoch()

    def _interface_part(self, block) -> int:
        part = self._interface_parts.get(block.text)
        if part is None:
            part = hash(interface_text(block))
            if len(self._interface_parts) > MEMO_LIMIT:
                self._interface_parts.clear()
            self._interface_parts[block.text] = part
        return part

    def _module_file(self, dotted: str, near: str) -> str | None:
        key = (dotted, os.path.dirname(near))
        if key not in self._module_files:
            # Cached for the workspace's life (a new file appears on the next Workspace, or
            # after forget_disk); most lookups are of names that are no file at all.
            self._module_files[key] = self._find_module_file(*key)
        return self._module_files[key]

    def _find_module_file(self, dotted: str, near_folder: str) -> str | None:
        relative = os.path.join(*dotted.split("."))
        for folder in [*map(str, self.roots), near_folder or "."]:
            for candidate in (os.path.join(folder, relative + ".py"), os.path.join(folder, relative, "__init__.py")):
                if os.path.isfile(candidate):
                    return self._aliases.get(os.path.realpath(candidate), candidate)
        return None

    def forget_disk(self, keep: str) -> None:
        """Forget what this Workspace knows of files other than `keep` (texts set for them,
        what is on disk, which files exist), as a new Workspace would: they are read again,
        and only an index whose text changed is rebuilt."""
        for path in [path for path in self._texts if path != keep]:
            self.forget_text(path)
            if not os.path.isfile(path):  # a text with no file ("<stdin>"): nothing can import it
                self._indexes.pop(path, None)
                self._results = {key: result for key, result in self._results.items() if key[1] != path}
        self._stale.update(path for path in self._indexes if path != keep)
        found = {key: self._find_module_file(*key) for key in self._module_files}
        if found != self._module_files or self._unreadable:  # a file appeared, vanished or became readable
            self._module_files, self._unreadable = found, {}
            self._new_epoch()

    def resolve_symbol(self, dotted: str, origin: ModuleIndex, depth: int = 0):
        """`pkg.layers.Block` → the ClassInfo/FunctionInfo it names, if it is in the workspace."""
        if depth > 4 or "." not in dotted or dotted.startswith(EXTERNAL_PREFIXES):
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module_name, rest = ".".join(parts[:cut]), parts[cut:]
            path = self._module_file(module_name, origin.path)
            if path is None or path in self._unreadable or path in self._indexing:
                continue
            entry = self._indexes.get(path)  # kept fresh by _refresh; a closed file is read once
            try:
                module = entry[1] if entry is not None else self.index(path)
            except (OSError, SourceError) as error:
                self._unreadable[path] = str(error)
                continue
            return _lookup(module, rest, depth, self)
        return None

    # --- analysis ------------------------------------------------------------------------------
    @gc_paused
    def analyze_file(self, path: str, text: str | None = None) -> Report:
        """Findings of one file: the roots it defines, followed through the workspace."""
        path = str(path)
        if text is not None:
            self.set_text(path, text)
        self._given(path)
        self._refresh()
        report = Report(path)
        try:
            module = self.index(path)
        except (OSError, SourceError) as error:
            report.problems.append(SourceProblem(path, str(error)))
            return report
        results = self._run(module.roots_with_modules(self.config))
        merged = merge_findings(results, self.config)
        report.findings = sorted((f for f in merged.values() if f.path == path),
                                 key=lambda f: (f.span.line, f.span.column, f.code))
        report.problems = self._problems(module, results)
        return report

    @gc_paused
    def analyze(self, paths) -> list[Report]:
        """Every .py file under `paths`; findings are filed under the file they occur in."""
        files = list(iter_python_files(paths, self.config.exclude))
        for path in files:
            self._given(path)
        self._refresh()
        reports = {path: Report(path) for path in files}
        modules = []
        for path in files:
            try:
                modules.append(self.index(path))
            except (OSError, SourceError) as error:
                reports[path].problems.append(SourceProblem(path, str(error)))
        results = self._run([root for module in modules for root in module.roots_with_modules(self.config)])
        for module in modules:
            reports[module.path].problems.extend(self._problems(module, results))
        for finding in merge_findings(results, self.config).values():
            reports.setdefault(finding.path, Report(finding.path)).findings.append(finding)
        for report in reports.values():
            report.findings.sort(key=lambda f: (f.span.line, f.span.column, f.code))
        return list(reports.values())

    def _run(self, roots) -> list[RootResult]:
        """Each root's result: cached while valid, else from a new pass."""
        if len(self.memo) > MEMO_LIMIT:
            self.memo.clear()
        analysis = None
        results = []
        for root in roots:
            owner = root.owner and (root.owner.module.path, root.owner.name)
            site = root.site and (root.site[0], root.site[1].lineno, root.site[1].col_offset,
                                  tuple((name, ast.unparse(value)) for name, value in root.site[2]), root.site[3:])
            key = (root.mode, root.function.module.path, root.function.qualname, owner, root.passed, site)
            result = self._results.get(key)
            if result is None or not self._valid(result):
                if analysis is None:
                    analysis = Analysis(self.config, self.memo, self, self.epoch, self.generation)
                result = self._results[key] = analysis.run_root(root.mode, root.function, root.owner, root.passed,
                                                                root.site and root.site[1:])
            results.append(result)
        return results

    def _valid(self, result: RootResult) -> bool:
        """Nothing the root's pass read has changed: the same interface epoch, every module
        still indexed as it was, every function still with the Block it had."""
        if result.epoch != self.epoch:
            return False
        indexes = self._indexes
        for function, block in result.deps:
            if function.block is not block:
                return False
            entry = indexes.get(function.module.path)
            if entry is None or entry[1] is not function.module:
                return False
        return True

    def _problems(self, module: ModuleIndex, results) -> list[SourceProblem]:
        """Syntax errors in what analysing the file parses, whatever earlier analyses parsed:
        the blocks indexing parses, the modules' forwards, and what the roots reached."""
        blocks = dict.fromkeys([*module.eager, *module.candidates])
        for result in results:
            for function, block in result.deps:
                if function.module is module:
                    blocks[block] = None
        return block_problems(module.path, blocks)

    def current_function(self, function: FunctionInfo) -> FunctionInfo | None:
        """The definition now standing where a memoised walk saw `function`."""
        entry = self._indexes.get(function.module.path)
        if entry is None:
            return None
        return _lookup(entry[1], function.qualname.split("."), 0, self)

    def current_class(self, cls: ClassInfo) -> ClassInfo | None:
        entry = self._indexes.get(cls.module.path)
        return entry[1].classes.get(cls.name) if entry else None


def _lookup(module: ModuleIndex, rest: list[str], depth: int, workspace: Workspace):
    head = rest[0]
    if head in module.functions and len(rest) == 1:
        return module.functions[head]
    if head in module.classes:
        cls = module.classes[head]
        if len(rest) == 1:
            return cls
        if len(rest) == 2:
            return cls.methods.get(rest[1])
        return None
    if head in module.imports:  # re-export: `from .layers import Block` in a package __init__
        return workspace.resolve_symbol(".".join([module.imports[head], *rest[1:]]), module, depth + 1)
    return None


def iter_python_files(paths, exclude=()):
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield str(path)
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.endswith(".py"):
                    full = os.path.join(folder, name)
                    if not any(Path(full).match(pattern) or pattern in full for pattern in exclude):
                        yield full


SHARED_WORKSPACES = 4
_shared: OrderedDict[tuple, tuple[Workspace, threading.Lock]] = OrderedDict()
_shared_lock = threading.Lock()


def analyze_source(text: str, path: str = "<unknown>", config: Config | None = None) -> Report:
    """Analyses one file's text. Imports resolve against the file's folder when it exists;
    other files are read from disk. The result is a new Workspace's, but successive calls
    for files of one folder reuse one Workspace (the most recent few are kept), so that
    re-analysing after an edit redoes only what it touched."""
    folder = Path(path).parent if path and not path.startswith("<") else None
    root = folder if folder and folder.is_dir() else None
    key = (str(root) if root else None, config or Config())
    with _shared_lock:
        entry = _shared.pop(key, None) or (Workspace([root] if root else [], config), threading.Lock())
        _shared[key] = entry
        while len(_shared) > SHARED_WORKSPACES:
            _shared.popitem(last=False)
    workspace, lock = entry
    with lock:
        workspace.forget_disk(keep=str(path))
        return workspace.analyze_file(path, text)


def analyze_paths(paths, config: Config | None = None) -> list[Report]:
    roots = [Path(p) if Path(p).is_dir() else Path(p).parent for p in paths]
    return Workspace(roots, config).analyze(paths)
