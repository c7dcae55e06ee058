"""Work beside the arm's (adapt's calibration fit, the twin's predictions), and the
wall clock of a run whose steps overlap."""

import json
import threading

import pytest

from realgap.adapt.beside import Beside
from realgap.adapt.progress import PROGRESS, Steps
from realgap.runs import RunFolder


def test_work_beside_runs_in_another_thread_while_the_caller_works():
    started, release = threading.Event(), threading.Event()

    def work():
        started.set()
        # Finishes only once the caller, still working, lets it: proof that both ran at once.
        assert release.wait(timeout=60)
        return threading.current_thread().name

    beside = Beside(work, name="fit", inline=False)
    assert started.wait(timeout=60) and not beside.done()
    release.set()
    name, seconds = beside.wait()
    assert name.startswith("realgap-fit") and name != threading.current_thread().name
    assert seconds >= 0


def test_an_error_beside_is_raised_on_wait_and_only_logged_when_settling(caplog):
    def broken():
        raise ValueError("no cube in any frame")

    with pytest.raises(ValueError, match="no cube"):
        Beside(broken, inline=False).wait()
    # The caller is already failing: its own error must not be hidden by this one.
    assert Beside(broken, name="fit", inline=False).settle() is None
    assert "fit beside the failed step failed too" in caplog.text


def test_with_glfw_the_work_runs_in_the_main_thread_first(monkeypatch):
    # GLFW's contexts belong to the main thread (macOS): a fit there cannot render in
    # another, so it runs first, one step after the other, as before.
    monkeypatch.setenv("MUJOCO_GL", "glfw")
    order = []
    beside = Beside(lambda: order.append(threading.current_thread().name) or "fitted")
    order.append("the arm's evaluation")
    assert beside.done() and beside.wait()[0] == "fitted"
    assert order == [threading.main_thread().name, "the arm's evaluation"]
    monkeypatch.setenv("MUJOCO_GL", "egl")
    assert not Beside(lambda: threading.current_thread().name).wait()[0].startswith("Main")


def test_overlapping_steps_keep_their_own_seconds_and_the_run_its_wall_clock(tmp_path):
    run = RunFolder(tmp_path)
    steps = Steps(run, resume=False)
    steps.finish("record")
    # The fit (120 s) beside the arm's evaluation (90 s): each its own, the run's wall
    # clock once.
    steps.finish("calibrate", seconds=120.0)
    steps.finish("before", seconds=90.0)
    assert steps.seconds["calibrate"] == 120.0 and steps.seconds["before"] == 90.0
    assert steps.wall < 60  # this test's own few milliseconds, not 210 s
    saved = json.loads(run.file(PROGRESS).read_text())
    assert saved["done"] == ["record", "calibrate", "before"]
    # A resumed run adds to what the first attempt spent.
    again = Steps(run, resume=True)
    again.finish("retrain", seconds=30.0)
    assert again.seconds["calibrate"] == 120.0 and again.wall >= saved["wall"]


def test_a_progress_file_from_before_overlapping_steps_resumes_with_their_sum(tmp_path):
    run = RunFolder(tmp_path)
    seconds = {"record": 3.0, "calibrate": 97.0}
    run.write_json(PROGRESS, {"done": ["record", "calibrate"], "seconds": seconds})
    assert Steps(run, resume=True).wall == 100.0
