"""FuseLens: see why torch.compile won't give you one clean graph, and what a compiler makes of your code.

Components (each a sub-package): `fuselens.analysis` (static analyzer), `fuselens.compiler`
(guarded capture + fusion compiler), `fuselens.server` (language server).
"""
__version__ = "0.1.0"
