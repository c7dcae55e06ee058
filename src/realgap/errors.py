"""The errors realgap reports to a user as one line (exit code 2) instead of a traceback.

Everything realgap raises because of what a user gave it -- a file, an option, a
policy folder, an arm that stopped answering -- is a :class:`RealgapError`. The
command line prints those as one line; any other exception is a bug in realgap
and keeps its traceback.
"""


class RealgapError(Exception):
    """Base of every error caused by input or by the world, not by realgap's code."""


class ConfigError(RealgapError, ValueError):
    """Bad input: a value, file, name or option (the message names which, and where)."""


class RealgapStop(RealgapError, RuntimeError):
    """A run stopped for a reason the user must act on (camera check, safety stop...)."""


class MissingExtra(RealgapError, ImportError):
    """An optional dependency is not installed (the message says which extra brings it)."""


class TrainingStopped(RealgapStop):
    """Training stopped on a signal after writing a checkpoint (the message says how to
    resume); ``signal_name`` is SIGINT or SIGTERM."""

    def __init__(self, message: str, signal_name: str):
        super().__init__(message)
        self.signal_name = signal_name
