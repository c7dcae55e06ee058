"""The ``realgap`` command line: one subcommand per module in this package.

Each module exposes ``register(subparsers)``, which adds its parser and sets
``func``. Heavy imports (torch, mujoco) happen inside the handlers so that
``realgap --help`` stays instant.
"""

from __future__ import annotations

import argparse
import sys

from realgap import __version__
from realgap.cli import (
    bench,
    calibrate,
    camera,
    demo,
    deploy,
    diagnose,
    export,
    imitate,
    model,
    report,
    toy,
    train,
    view,
)
from realgap.cli import eval as eval_

COMMANDS = [
    demo,
    toy,
    model,
    view,
    train,
    export,
    bench,
    camera,
    deploy,
    eval_,
    report,
    calibrate,
    diagnose,
    imitate,
]
"""Subcommand modules, in the order ``realgap --help`` lists them."""


class UserError(Exception):
    """An error caused by the user's input: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="realgap",
        description="Train SO-101 policies in simulation, run them on the arm, "
        "and measure the reality gap.",
    )
    parser.add_argument("--version", action="version", version=f"realgap {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def _stop_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so ``with SafeArm(...)`` blocks release the arm
    (a killed process must not leave the servos holding torque)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: _raise_interrupt())


def _raise_interrupt() -> None:
    raise KeyboardInterrupt("SIGTERM")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _stop_on_sigterm()
    from realgap.errors import RealgapStop

    try:
        return int(args.func(args) or 0)
    except (UserError, ValueError, FileNotFoundError, RealgapStop, ConnectionError) as error:
        print(f"realgap {args.command}: error: {error}", file=sys.stderr)
        return 2
    except ImportError as error:
        if "realgap[real]" not in str(error):
            raise
        print(f"realgap {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"realgap {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
