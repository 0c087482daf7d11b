"""HCP contracts: the document, the rubric language (CEL), versions and serving."""

import sys
import types

# The CEL library's package imports its own command line first (cel/cli.py: a REPL built
# on prompt_toolkit, pygments and rich). Nothing here uses it, and it cost every command
# that reads a contract a quarter of its start-up (bench/cli_startup.py). An empty module
# stands in for it, set before any module of this package imports cel.
sys.modules.setdefault("cel.cli", types.ModuleType("cel.cli"))
