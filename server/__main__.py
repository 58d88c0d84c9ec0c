"""`python -m fuselens.server [serve] [--tcp HOST:PORT]`."""
import sys

from .cli import main

argv = sys.argv[1:]
sys.exit(main(argv if argv[:1] == ["serve"] else ["serve", *argv]))
