"""Which of ``realgap adapt``'s steps have finished, and how long each took.

``adapt_progress.json`` in the run folder is rewritten (atomically) after every step,
so ``realgap adapt ... --resume`` skips what finished -- the recording, the
calibration, finished evaluation episodes, a finished or checkpointed retraining --
and the report states every step's wall time, the resumed ones' included.
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
        path = run.file(PROGRESS)
        if resume and path.is_file():
            saved = json.loads(path.read_text())
            self.done, self.seconds = list(saved["done"]), dict(saved["seconds"])
        self.tick = time.perf_counter()

    def finished(self, step: str) -> bool:
        return step in self.done

    def start(self) -> None:
        self.tick = time.perf_counter()

    def finish(self, step: str) -> None:
        """Record ``step`` as finished; its seconds add to any an earlier attempt spent."""
        spent = round(time.perf_counter() - self.tick, 1)
        self.seconds[step] = round(self.seconds.get(step, 0.0) + spent, 1)
        if step not in self.done:
            self.done.append(step)
        self.run.write_json(PROGRESS, {"done": self.done, "seconds": self.seconds})
        self.tick = time.perf_counter()
