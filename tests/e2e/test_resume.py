"""Long runs survive: a training killed (SIGKILL) and resumed ends with the weights of an
uninterrupted run; SIGTERM stops cleanly with a checkpoint; a checkpoint write that
fails leaves the previous one; resume refuses a run it cannot continue."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from realgap.cli import main
from realgap.runs import RunFolder
from realgap.train.checkpoint import Checkpointer

TINY = ["--quick", "--nominal", "--checkpoint-every", "0.001"]
"""Checkpoints after every round (or SAC iteration), so a kill always finds one."""


def realgap(*argv: str) -> subprocess.Popen:
    code = "import sys; from realgap.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_checkpoint(out: Path, process: subprocess.Popen, after: int, key: str) -> None:
    """Until the run's checkpoint is past ``after`` rounds (or iterations)."""
    state = out / "checkpoint" / "state.pt"
    deadline = time.time() + 300
    while time.time() < deadline:
        assert process.poll() is None, process.communicate()
        if state.exists():
            try:
                if torch.load(state, weights_only=False)[key] >= after:
                    return
            except (EOFError, RuntimeError):  # being replaced this instant
                pass
        time.sleep(0.05)
    raise AssertionError("no checkpoint came")


def digest(out: Path) -> str:
    return json.loads((out / "policy" / "contract.json").read_text())["weights_sha256"]


@pytest.mark.parametrize(
    "recipe, extra, key, after",
    [
        ("distill", ["--dagger-rounds", "6"], "round", 3),
        ("sac", ["--total-steps", "1600"], "iteration", 120),
    ],
)
def test_a_killed_run_resumes_to_the_uninterrupted_runs_weights(
    tmp_path, recipe, extra, key, after
):
    argv = ["train", "Reach", "--recipe", recipe, *TINY, *extra]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    # The uninterrupted run checkpoints rarely (half the time: writing a SAC replay
    # buffer every iteration is most of it), so the weights must not depend on that either.
    rarely = [("1000" if a == "0.001" else a) for a in argv]
    assert realgap(*rarely, "--out", str(whole)).wait() == 0
    process = realgap(*argv, "--out", str(killed))
    wait_for_checkpoint(killed, process, after, key)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed / "summary.json").exists()
    resumed = realgap("train", "--resume", str(killed))
    output = resumed.communicate()
    assert resumed.returncode == 0, output
    assert digest(killed) == digest(whole)
    # The resumed run's curve continues the first one's, row for row.
    assert (killed / "metrics.csv").read_text().count("\n") == (
        whole / "metrics.csv"
    ).read_text().count("\n")


def test_sigterm_stops_with_a_checkpoint_the_best_policy_and_how_to_resume(tmp_path):
    out = tmp_path / "run"
    process = realgap("train", "Reach", *TINY, "--dagger-rounds", "40", "--out", str(out))
    wait_for_checkpoint(out, process, 1, "round")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143
    lines = [line for line in err.strip().splitlines() if line.startswith("realgap train")]
    assert len(lines) == 1 and f"realgap train --resume {out}" in lines[0]
    assert (out / "policy" / "contract.json").exists()  # the best policy so far
    assert Checkpointer(RunFolder(out)).exists()


def test_a_failed_checkpoint_write_leaves_the_previous_one(tmp_path, monkeypatch, caplog):
    checkpointer = Checkpointer(RunFolder(tmp_path), every_s=1.0)
    assert checkpointer.save({"round": 1, "weights": torch.ones(3)})

    def full_disk(state, handle):
        handle.write(b"half a checkp")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    assert not checkpointer.save({"round": 2, "weights": torch.zeros(3)})
    monkeypatch.undo()
    assert checkpointer.load()["round"] == 1  # the previous checkpoint, whole
    assert not list((tmp_path / "checkpoint").glob("*.partial"))
    assert "the previous one" in caplog.text and "No space left" in caplog.text


def test_resume_refuses_another_task_other_arguments_and_a_finished_run(tmp_path, capsys):
    out = tmp_path / "run"
    process = realgap("train", "Reach", *TINY, "--dagger-rounds", "40", "--out", str(out))
    wait_for_checkpoint(out, process, 1, "round")
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert (
        main(["train", "PickCube", *TINY, "--dagger-rounds", "40", "--out", str(out), "--resume"])
        == 2
    )
    err = capsys.readouterr().err
    assert "task: the run has 'Reach', now 'PickCube'" in err and len(err.splitlines()) == 1
    assert (
        main(["train", "Reach", *TINY, "--dagger-rounds", "30", "--out", str(out), "--resume"]) == 2
    )
    assert "dagger_rounds: the run has 40, now 30" in capsys.readouterr().err
    assert (
        main(["train", "Reach", "--recipe", "sac", "--quick", "--out", str(out), "--resume"]) == 2
    )
    assert "'distill' run cannot be resumed as 'sac'" in capsys.readouterr().err
    assert main(["train", "--resume", str(out), "--seed", "3"]) == 2
    assert "--seed" in capsys.readouterr().err
    assert main(["train", "--resume", str(tmp_path / "nothing")]) == 2
    assert "not a realgap training run" in capsys.readouterr().err
