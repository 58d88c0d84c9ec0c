"""`fuselens serve [--tcp HOST:PORT]`: run the language server (stdio by default)."""
from __future__ import annotations

import argparse
import gc
import logging
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fuselens serve", description="Run the FuseLens language server.")
    parser.add_argument("command", nargs="?", default="serve", choices=["serve"])
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead (for debugging)")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    # Logs go to stderr: stdout carries the protocol.
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    from .app import create_server

    server = create_server()
    # The analyzer allocates many short-lived objects per keystroke; with the default gen-0
    # threshold (700) the collector runs hundreds of times per analysis of a big file (about 15%
    # of it, measured). Collect less often, and never re-scan what start-up loaded.
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            parser.error("--tcp expects HOST:PORT, e.g. 127.0.0.1:2087")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0
