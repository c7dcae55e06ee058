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
    adapt,
    bench,
    calibrate,
    camera,
    demo,
    deploy,
    diagnose,
    export,
    imitate,
    model,
    profile,
    report,
    sweep,
    toy,
    train,
    view,
)
from realgap.cli import eval as eval_
from realgap.errors import RealgapError, TrainingStopped
from realgap.runtime import configure_torch_threads

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
    adapt,
    imitate,
    sweep,
    profile,
]
"""Subcommand modules, in the order ``realgap --help`` lists them."""


USER_OS_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
"""A path the user gave that cannot be read or written: one line, not a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="realgap",
        description="Train SO-101 policies in simulation, run them on the arm, "
        "and measure the reality gap.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def version_text() -> str:
    """``realgap 0.1.0 (commit 1a2b3c4)``: the commit of the checkout realgap runs from
    (``-dirty`` with uncommitted changes), so a figure can name the code that made it."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    commit = "unknown: not run from a git checkout"
    if (root / ".git").exists():
        try:
            described = subprocess.run(
                ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=10"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            commit = described.stdout.strip() or commit
        except (OSError, subprocess.SubprocessError):
            pass
    return f"realgap {__version__} (commit {commit})"


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
    """Run one subcommand. Errors caused by input or by the world (``RealgapError``,
    unreadable paths, a lost connection) print one line and return 2; anything else is
    a bug in realgap and keeps its traceback. Ctrl-C returns 130, SIGTERM 143."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _stop_on_sigterm()
    try:
        # Every command, not only training: torch's default pool fights the renderer's
        # and OpenCV's threads (a PickCube decision took 1.2-2.8 ms instead of 0.47
        # beside one other job), and an evaluation reproduces only on its threads.
        configure_torch_threads()
        if isinstance(getattr(args, "task", None), str):
            from realgap.sim.tasks import task_name

            args.task = task_name(args.task)  # `realgap train reach` is Reach
        return int(args.func(args) or 0)
    except TrainingStopped as stopped:  # a clean stop on a signal, with a checkpoint
        print(f"realgap {args.command}: {stopped}", file=sys.stderr)
        return 143 if stopped.signal_name == "SIGTERM" else 130
    except (RealgapError, ConnectionError, *USER_OS_ERRORS) as error:
        print(f"realgap {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        by = "terminated (SIGTERM)" if str(interrupt) == "SIGTERM" else "interrupted"
        print(f"realgap {args.command}: {by}", file=sys.stderr)
        return 143 if str(interrupt) == "SIGTERM" else 130


if __name__ == "__main__":
    sys.exit(main())
