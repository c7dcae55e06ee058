"""Work for the computer while the arm works: ``realgap adapt`` runs its calibration fit
beside the old policy's evaluation on the arm, and the twin's predictions (and the gap
attribution) beside the adapted policy's.

On a real arm a matched evaluation is mostly waiting -- 15 Hz control, resets -- so a
fit of two to four minutes costs no time beside it. On a fake arm both compute, and a
second core still takes a fifth off: a PickCube arm's fit (99 s) and a 13-episode
evaluation (71 s), 170 s one after the other, took 137 s together on a 2-core CPU, with
the same results. A thread, not a process, for the reasons given in
:func:`realgap.diagnose.hand_eye._both_coarse_fits`: MuJoCo, OpenCV and torch release the
GIL, and a thread renders through OpenGL contexts of its own (with EGL or OSMesa; with
GLFW the work runs in the main thread, one step after the other, as before).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from realgap.runtime import headless_rendering

T = TypeVar("T")
log = logging.getLogger(__name__)


class Beside(Generic[T]):
    """``work()`` started in a thread of its own; :meth:`wait` returns its result and
    the seconds it took (or raises what it raised). Where only the main thread may
    render (GLFW, :func:`~realgap.runtime.headless_rendering`), or ``inline``, the work
    runs here and now instead, as it did before it had a thread."""

    def __init__(self, work: Callable[[], T], name: str = "work", inline: bool | None = None):
        self.name = name
        here = not headless_rendering() if inline is None else inline
        if here:
            self._pool = None
            self._future = Future()
            self._future.set_result(timed(work))  # an error is raised here, as before
        else:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"realgap-{name}")
            self._future = self._pool.submit(timed, work)

    def done(self) -> bool:
        return self._future.done()

    def wait(self) -> tuple[T, float]:
        """Block until the work has finished; ``(result, seconds)``."""
        try:
            return self._future.result()
        finally:
            if self._pool is not None:
                self._pool.shutdown()

    def settle(self) -> tuple[T, float] | None:
        """:meth:`wait`, for when the caller is already failing: the work's own error is
        logged, not raised, so it cannot hide the caller's; None then."""
        try:
            return self.wait()
        except Exception:
            log.warning("%s beside the failed step failed too", self.name, exc_info=True)
            return None


def timed(work: Callable[[], T]) -> tuple[T, float]:
    """``(work(), seconds it took)``."""
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start
