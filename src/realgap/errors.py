"""Errors the command line reports as one line (exit code 2) instead of a traceback."""


class RealgapStop(RuntimeError):
    """A run stopped for a reason the user must act on (camera check, safety stop...)."""
