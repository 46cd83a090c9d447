"""The ``robotlab`` command (also ``python -m robotlab``)."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence

MODES = ("thread", "process", "subinterpreter", "ray")


def _parser() -> argparse.ArgumentParser:
    from robotlab import __version__

    parser = argparse.ArgumentParser(prog="robotlab", description="robotlab command line")
    parser.add_argument("--version", action="version", version=f"robotlab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the demo network (offline unless --model is given)")
    demo.add_argument("--model", help="a litellm model name (needs that provider's API key); default: offline")
    demo.add_argument("--parallel", default="thread", choices=MODES,
                      help="where the network's tasks run (default: thread); the other modes add a CPU-bound "
                           "tool and print the speedup measured against thread mode (subinterpreter: CPython "
                           "3.13+; ray: the ray extra, a local Ray is started)")
    demo.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                      help="a live line per task on stderr (default: only when stderr is a terminal, and not with -v)")
    demo.add_argument("-v", "--verbose", action="store_true", help="log the Narrator's hook trace to stderr")
    return parser


def missing_backend(mode: str) -> str | None:
    """What *mode* needs that this Python lacks (one line), or None when it can run here."""
    if mode == "subinterpreter":
        from robotlab.errors import DependencyError
        from robotlab.parallel.subinterpreter_backend import load_interpreters

        try:
            load_interpreters()
        except DependencyError:
            version = ".".join(map(str, sys.version_info[:3]))
            return (f"--parallel subinterpreter needs CPython 3.13+ with the subinterpreters extra "
                    f"(in a checkout: pip install -e '.[subinterpreters]'); this is Python {version}. "
                    "--parallel process runs everywhere")
    if mode == "ray" and importlib.util.find_spec("ray") is None:
        return "--parallel ray needs Ray: the ray extra (in a checkout: pip install -e '.[ray]')"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``robotlab [--version] demo [--model M] [--parallel MODE] [--progress]``.

    Returns the exit code: 0 when every task of the demo succeeded, 1 when any failed (its errors go to stderr),
    2 for a mode this Python cannot run (one line on stderr says what it needs).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = _parser().parse_args(argv)
    missing = missing_backend(args.parallel)
    if missing is not None:
        print(f"robotlab demo: {missing}", file=sys.stderr)
        return 2
    if args.verbose:
        from robotlab.hooks import Narrator

        logging.basicConfig(level=logging.INFO, format="%(message)s")
        Narrator.enable()
    from robotlab.demo import run_demo

    progress = args.progress
    if progress is None:  # -v's trace and a live table would both redraw stderr: the trace wins
        progress = False if args.verbose else "auto"
    return run_demo(model=args.model, parallel_mode=args.parallel, progress=progress)


if __name__ == "__main__":
    sys.exit(main())
