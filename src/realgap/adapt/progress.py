"""Which of ``realgap adapt``'s steps have finished, and how long each took.

``adapt_progress.json`` in the run folder is rewritten (atomically) after every step,
so ``realgap adapt ... --resume`` skips what finished -- the recording, the
calibration, finished evaluation episodes, a finished or checkpointed retraining --
and the report states every step's wall time, the resumed ones' included. Steps that
run beside another (the calibration fit beside the arm's first evaluation) overlap, so
the run's own wall clock is kept apart from them.
"""

from __future__ import annotations

import json
import time

from realgap.runs import RunFolder

PROGRESS = "adapt_progress.json"
STEPS = ("record", "calibrate", "before", "retrain", "after", "twin", "attribution")


class Steps:
    """Finished steps and their seconds, persisted in the run folder."""

    def __init__(self, run: RunFolder, resume: bool):
        self.run = run
        self.done: list[str] = []
        self.seconds: dict[str, float] = {}
        self.wall = 0.0
        """Wall-clock seconds of the run so far, earlier attempts' included."""
        path = run.file(PROGRESS)
        if resume and path.is_file():
            saved = json.loads(path.read_text())
            self.done, self.seconds = list(saved["done"]), dict(saved["seconds"])
            # (a file from before overlapping steps: they were one after the other)
            self.wall = float(saved.get("wall", sum(self.seconds.values())))
        self.tick = time.perf_counter()

    def finished(self, step: str) -> bool:
        return step in self.done

    def finish(self, step: str, seconds: float | None = None) -> None:
        """Record ``step`` as finished; its seconds (the time since the last step
        finished, or ``seconds`` for a step timed apart, as one that ran beside
        another) add to any an earlier attempt spent."""
        now = time.perf_counter()
        elapsed, self.tick = now - self.tick, now
        self.wall += elapsed
        spent = elapsed if seconds is None else seconds
        self.seconds[step] = round(self.seconds.get(step, 0.0) + spent, 1)
        if step not in self.done:
            self.done.append(step)
        progress = {"done": self.done, "seconds": self.seconds, "wall": round(self.wall, 1)}
        self.run.write_json(PROGRESS, progress)
