"""The one place the server touches the static analyzer (fuselens.analysis).

Imported lazily so the server still starts (and says why nothing is reported) when the
analyzer cannot be imported.
"""
from __future__ import annotations

import threading
from pathlib import Path

from .settings import Settings


class AnalyzerUnavailable(RuntimeError):
    pass


_module = None
_lock = threading.Lock()


def analysis():
    global _module
    with _lock:
        if _module is None:
            try:
                import fuselens.analysis as module

                module.analyze_source  # noqa: B018 - fail here, not mid-run
            except (ImportError, AttributeError) as error:
                raise AnalyzerUnavailable(f"the FuseLens analyzer cannot be imported: {error}") from error
            _module = module
        return _module


class ConfigResolver:
    """Config for a document: [tool.fuselens] from the nearest pyproject.toml, then the editor's
    select/ignore on top. Cached per folder; `clear()` on settings or pyproject changes."""

    def __init__(self) -> None:
        self._by_folder: dict[str, tuple[object, str | None]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._by_folder.clear()

    def resolve(self, path: str, settings: Settings):
        """Returns (Config, problem message or None)."""
        module = analysis()
        folder = str(Path(path).parent) if path and Path(path).is_absolute() else ""
        overrides = {"select": settings.select, "ignore": settings.ignore}  # None: not overridden
        if settings.assume_modules_compiled is not None:
            overrides["assume_modules_compiled"] = settings.assume_modules_compiled
        key = folder + "\0" + repr(overrides)
        with self._lock:
            cached = self._by_folder.get(key)
        if cached is not None:
            return cached
        problem = None
        try:
            config = module.load_config(Path(folder)) if folder else module.Config()
        except Exception as error:  # ConfigError, or an unreadable file
            config, problem = module.Config(), f"{error} (using defaults)"
        try:
            config = config.with_overrides(**overrides)
        except ValueError as error:
            problem = f"fuselens.select/ignore: {error} (editor selection not applied)"
        with self._lock:
            self._by_folder[key] = (config, problem)
        return config, problem


def excluded(path: str, config) -> bool:
    """`exclude` of [tool.fuselens], matched as `fuselens check` matches it."""
    return any(Path(path).match(pattern) or pattern in path for pattern in getattr(config, "exclude", ()))


def analyze(text: str, path: str, config):
    return analysis().analyze_source(text, path, config)


def rule(code: str):
    """The Rule for a code, or None for codes the table does not know."""
    try:
        return analysis().RULES.get(code)
    except AnalyzerUnavailable:
        return None
