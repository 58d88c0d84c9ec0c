"""Static analysis: predicts where TorchDynamo breaks the graph, what tracing bakes in,
and what recompiles — without running code. Imports neither torch nor pygls."""
from .config import Config, ConfigError, load_config
from .fixes import apply_edits
from .findings import CallSite, Finding, Fix, Report, SourceProblem, Span, TextEdit
from .rules import RULES, Rule
from .source import SourceError, decode_source
from .workspace import Workspace, analyze_paths, analyze_source

__all__ = ["Config", "ConfigError", "load_config", "CallSite", "Finding", "Fix", "Report", "SourceProblem",
           "Span", "TextEdit", "apply_edits", "RULES", "Rule", "SourceError", "decode_source", "Workspace", "analyze_paths",
           "analyze_source"]
