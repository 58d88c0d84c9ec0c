"""One small module per concern; routes.py maps LSP methods to these functions."""
