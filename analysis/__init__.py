"""Static analysis: predicts where TorchDynamo breaks the graph, what tracing bakes in,
and what recompiles — without running code. Imports neither torch nor pygls."""
from .config import Config, ConfigError, load_config
from .findings import CallSite, Finding, Fix, Report, SourceProblem, Span, TextEdit
from .rules import RULES, Rule
from .source import SourceError, decode_source
from .workspace import Workspace, analyze_paths, analyze_source

__all__ = ["Config", "ConfigError", "load_config", "CallSite", "Finding", "Fix", "Report", "SourceProblem",
           "Span", "TextEdit", "RULES", "Rule", "SourceError", "decode_source", "Workspace", "analyze_paths",
           "analyze_source"]
