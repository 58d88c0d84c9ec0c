"""Analyzer settings: defaults, `[tool.fuselens]` in pyproject.toml, and overrides."""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .rules import RULES, resolve_codes


@dataclass(frozen=True)
class Config:
    select: frozenset[str] = frozenset(RULES)
    ignore: frozenset[str] = frozenset()
    # Treat every nn.Module subclass's forward as compiled (the common `torch.compile(model)`).
    assume_modules_compiled: bool = True
    exclude: tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        return code in self.select and code not in self.ignore

    def with_overrides(self, *, select=None, ignore=None, **others) -> "Config":
        changes = dict(others)
        if select is not None:
            changes["select"] = frozenset(resolve_codes(select))
        if ignore is not None:
            changes["ignore"] = frozenset(resolve_codes(ignore))
        return dataclasses.replace(self, **changes)


class ConfigError(ValueError):
    pass


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path | None = None) -> Config:
    """Reads `[tool.fuselens]` from the nearest pyproject.toml at or above `start`."""
    path = find_pyproject(start or Path.cwd())
    if path is None:
        return Config()
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("fuselens", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read [tool.fuselens]: {error}") from error
    return config_from_table(table, origin=str(path))


def config_from_table(table: dict, origin: str = "settings") -> Config:
    known = {"select", "ignore", "assume-modules-compiled", "exclude"}
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{origin}: unknown [tool.fuselens] keys: {', '.join(sorted(unknown))}")
    try:
        return Config().with_overrides(
            select=table.get("select"),
            ignore=table.get("ignore"),
            assume_modules_compiled=bool(table.get("assume-modules-compiled", True)),
            exclude=tuple(table.get("exclude", ())),
        )
    except ValueError as error:
        raise ConfigError(f"{origin}: {error}") from error
