"""The ``robotlab`` command (also ``python -m robotlab``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``robotlab demo [--model M] [--parallel MODE]``.

    Returns the exit code: 0 when every task of the demo succeeded, 1 when any failed (its errors go to stderr).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(prog="robotlab", description="robotlab command line")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the demo network (offline unless --model is given)")
    demo.add_argument("--model", help="a litellm model name (needs that provider's API key); default: offline")
    demo.add_argument("--parallel", default="thread", choices=["thread", "process", "subinterpreter"],
                      help="where the network's tasks run (default: thread); process and subinterpreter add a "
                           "CPU-bound tool and print the speedup measured against thread mode")
    demo.add_argument("-v", "--verbose", action="store_true", help="log the Narrator's hook trace to stderr")
    args = parser.parse_args(argv)
    if args.verbose:
        from robotlab.hooks import Narrator

        logging.basicConfig(level=logging.INFO, format="%(message)s")
        Narrator.enable()
    if args.model is not None:  # the errors say what failed; litellm's own "Provider List" banners add nothing
        import litellm

        litellm.suppress_debug_info = True
    from robotlab.demo import run_demo

    return run_demo(model=args.model, parallel_mode=args.parallel)


if __name__ == "__main__":
    sys.exit(main())
