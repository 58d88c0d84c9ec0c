"""Editor settings for the server: parsed from initializationOptions and workspace/configuration.

Settings are what the user typed into the editor (section `fuselens`, camelCase keys). They
never carry workspace trust: a cloned repository can ship `.vscode/settings.json`, so trust
comes only from the client itself (see `Trust` in app.py).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

SEVERITIES = ("error", "warning", "information", "hint")
DIAGNOSTIC_MODES = ("auto", "push", "pull")


@dataclass(frozen=True)
class Settings:
    # Rule selectors (ids, prefixes or names); None = use [tool.fuselens] / defaults.
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    # Every nn.Module's forward is a compile root; None = use [tool.fuselens] / the default (yes).
    assume_modules_compiled: bool | None = None
    debounce_ms: int = 250
    # As-you-type analysis skips bigger documents (generated code); `fuselens check` still runs.
    max_file_kb: int = 2048
    # Overrides of the default severity, keyed by category ("graph-break") or rule id ("FL110").
    severity: dict[str, str] = field(default_factory=dict)
    diagnostic_mode: str = "auto"
    # The worker runs user code with this interpreter (the user's environment).
    interpreter: tuple[str, ...] = (sys.executable,)
    worker_timeout_s: float = 120.0
    worker_memory_mb: int = 4096
    # Profile again the functions profiled before when their file is saved (trusted workspaces only).
    on_save: bool = False
    # Defaults of Compile and profile's options (fuselens.compiler.profile.DEFAULTS), camelCase keys.
    profile: dict = field(default_factory=dict)

    @property
    def debounce_s(self) -> float:
        return self.debounce_ms / 1000.0


def parse_settings(raw: object, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Returns the settings and a list of problems (bad values are skipped, not fatal)."""
    settings = base or Settings()
    problems: list[str] = []
    if raw is None:
        return settings, problems
    if not isinstance(raw, dict):
        return settings, [f"fuselens settings must be an object, got {type(raw).__name__}"]
    changes: dict[str, object] = {}

    def string_list(key: str):
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            problems.append(f"fuselens.{key} must be a list of rule selectors")
            return None
        return tuple(value)

    for key in ("select", "ignore"):
        if key in raw:
            value = string_list(key)
            if value is not None or raw[key] is None:
                changes[key] = value
    if "assumeModulesCompiled" in raw:
        value = raw["assumeModulesCompiled"]
        if value is None or isinstance(value, bool):
            changes["assume_modules_compiled"] = value
        else:
            problems.append("fuselens.assumeModulesCompiled must be true or false")
    if "debounceMs" in raw:
        value = raw["debounceMs"]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 10_000:
            changes["debounce_ms"] = int(value)
        else:
            problems.append("fuselens.debounceMs must be a number of milliseconds (0-10000)")
    if "maxFileSizeKb" in raw:
        value = raw["maxFileSizeKb"]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            changes["max_file_kb"] = value
        else:
            problems.append("fuselens.maxFileSizeKb must be a positive integer")
    if "severity" in raw:
        value = raw["severity"]
        if isinstance(value, dict) and all(str(v).lower() in SEVERITIES for v in value.values()):
            changes["severity"] = {str(k): str(v).lower() for k, v in value.items()}
        else:
            problems.append(f"fuselens.severity must map categories or rule ids to one of {SEVERITIES}")
    if "diagnosticMode" in raw:
        value = raw["diagnosticMode"]
        if value in DIAGNOSTIC_MODES:
            changes["diagnostic_mode"] = value
        else:
            problems.append(f"fuselens.diagnosticMode must be one of {DIAGNOSTIC_MODES}")
    if raw.get("interpreter"):
        value = raw["interpreter"]
        value = [value] if isinstance(value, str) else value
        if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
            changes["interpreter"] = tuple(value)
        else:
            problems.append("fuselens.interpreter must be a path or a list (command and arguments)")
    worker = raw.get("worker")
    if isinstance(worker, dict):
        timeout = worker.get("timeoutS")
        if timeout is not None:
            if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
                changes["worker_timeout_s"] = float(timeout)
            else:
                problems.append("fuselens.worker.timeoutS must be a positive number of seconds")
        memory = worker.get("memoryMb")
        if memory is not None:
            if isinstance(memory, int) and not isinstance(memory, bool) and memory >= 256:
                changes["worker_memory_mb"] = memory
            else:
                problems.append("fuselens.worker.memoryMb must be an integer >= 256")
    elif worker is not None:
        problems.append("fuselens.worker must be an object")
    execution = raw.get("execution")
    if isinstance(execution, dict) and "onSave" in execution:
        if isinstance(execution["onSave"], bool):
            changes["on_save"] = execution["onSave"]
        else:
            problems.append("fuselens.execution.onSave must be true or false")
    elif execution is not None and not isinstance(execution, dict):
        problems.append("fuselens.execution must be an object")
    if "profile" in raw:
        value, problem = profile_options(raw["profile"])
        changes["profile"] = value
        if problem:
            problems.append(problem)

    return replace(settings, **changes), problems


PROFILE_OPTIONS = {"torchCompile": bool, "torchCompileBudgetS": (int, float), "repeats": int, "warmup": int,
                   "timingBudgetS": (int, float), "kernelRepeats": int}


def profile_options(raw) -> tuple[dict, str | None]:
    if not isinstance(raw, dict):
        return {}, "fuselens.profile must be an object"
    kept, bad = {}, []
    for key, value in raw.items():
        kind = PROFILE_OPTIONS.get(key)
        if kind is not None and isinstance(value, kind) and (kind is bool or not isinstance(value, bool)) \
                and (kind is bool or value >= 0):
            kept[key] = value
        else:
            bad.append(key)
    return kept, (f"fuselens.profile: ignored {', '.join(bad)} (known: {', '.join(PROFILE_OPTIONS)})" if bad else None)
