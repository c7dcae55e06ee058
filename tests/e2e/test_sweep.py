"""``realgap sweep``: a tiny sweep on local Ray, resuming, failures and bad files."""

import csv
import json
import os
import sys

import pytest

import realgap.sweep
from realgap.cli import main
from realgap.errors import ConfigError
from realgap.sweep.spec import load_sweep, parse_sweep

TINY = """
name = "tiny"
task = "Reach"
seeds = [0]
worlds = ["sim"]
trials = 13

[[setting]]
name = "black"
"randomization.background_value" = [0.0, 0.0]

[[setting]]
name = "desks"
"randomization.background_value" = [0.0, 0.18]
"""


def write(tmp_path, text, name="sweep.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def ray_installed():
    if os.environ.get("CI"):
        import ray  # noqa: F401  -- CI must run these, not skip them
    else:
        pytest.importorskip("ray")


def test_tiny_sweep_runs_reports_a_failure_and_resumes(tmp_path, ray_installed, capsys):
    # Worlds: the nominal sim and an arm's twin (soft servos), as a sweep may name them;
    # a third setting that cannot train (no student envs) fails, and is reported, not
    # dropped. One sweep for all of it: Ray's start and a training are what cost here.
    twin = write(tmp_path, "[servo]\nkp_scale = 0.6\n", "soft_arm.toml")
    broken = '\n[[setting]]\nname = "broken"\nstudent_envs = 0\n'
    sweep = write(tmp_path, TINY.replace('["sim"]', f'["sim", "twin:{twin}"]') + broken)
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--out", str(out), "--quick", "--num-cpus", "2"]
    argv += ["--retries", "0"]
    assert main(argv) == 1
    assert "FAILED broken" in capsys.readouterr().out
    failed = json.loads((out / "failed.json").read_text())
    assert list(failed) == [next(p.name for p in (out / "runs").iterdir() if "broken" in p.name)]
    summary = json.loads((out / "summary.json").read_text())
    statuses = {r["setting"]: r["status"] for r in summary["runs"]}
    assert statuses == {"black": "done", "desks": "done", "broken": "failed"}
    pooled = {r["setting"]: r["seeds"] for r in summary["pooled"]}
    assert pooled == {"black": 1, "desks": 1, "broken": 0}
    done = [r for r in summary["runs"] if r["status"] == "done"]
    # Worlds by name, not by path, in every table, the plot and the report; the path
    # stays in each run's result file.
    assert {r["world"] for r in done} == {"sim", "twin:soft_arm"}
    assert str(tmp_path) not in (out / "summary.csv").read_text()
    assert str(tmp_path) not in (out / "report.html").read_text()
    # 13 trials over 13 spots: the 9 inside the training square are the ones counted.
    assert len(done) == 4 and all(r["trials"] == 9 for r in done)
    assert (out / "width.png").stat().st_size > 1000 and (out / "report.html").exists()
    assert "Sweep: tiny" in (out / "report.html").read_text()
    runs = sorted(p for p in (out / "runs").iterdir() if "broken" not in p.name)
    assert len(runs) == 2
    widths = (runs[0] / "randomization.toml").read_text()
    assert "background_value" in widths

    # A run killed mid-training leaves a folder without its result: only it runs again.
    kept = runs[1] / "trained.json"
    kept_mtime = kept.stat().st_mtime_ns
    (runs[0] / "trained.json").unlink()
    for result in runs[0].glob("result_*.json"):
        result.unlink()
    assert main(argv) == 1  # the broken setting fails again
    assert kept.stat().st_mtime_ns == kept_mtime
    assert (runs[0] / "trained.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    statuses = {r["setting"]: r["status"] for r in summary["runs"]}
    assert statuses == {"black": "done", "desks": "done", "broken": "failed"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (TINY.replace("trials = 13", "trials = 13\ncolour = 1"), "unknown keys \\['colour'\\]"),
        (TINY.replace("trials = 13", "trials = 5"), "at least 13"),
        (TINY.replace("background_value", "background_hue"), "unknown randomization field"),
        (TINY.replace('name = "black"', 'name = "black"\nlearning_rate = 1'), "learning_rate"),
        (TINY.replace('["sim"]', '["sim", "my_arm"]'), "'my_arm' is not 'sim'"),
        (TINY.replace("[0.0, 0.18]", "[0.3, 0.1]"), "background_value"),
        (TINY.replace("seeds = [0]", 'seeds = "0"'), "seeds must be a list"),
        (TINY.replace('task = "Reach"', 'task = "Juggle"'), "unknown task"),
    ],
)
def test_a_bad_sweep_file_is_one_clear_line(tmp_path, capsys, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        load_sweep(path)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_grid_expands_every_combination_and_keys_stay_stable():
    spec = parse_sweep(
        {
            "task": "LiftCube",
            "seeds": [0, 1],
            "worlds": ["sim"],
            "grid": {
                "randomization.camera_rot_wobble_deg": [1.0, 3.0],
                "dagger_rounds": [4, 8],
            },
        }
    )
    runs = spec.runs()
    assert spec.task == "PickCube" and len(runs) == 8
    assert len({run.key for run in runs}) == 8
    again = parse_sweep(
        {
            "task": "PickCube",
            "seeds": [0, 1],
            "worlds": ["sim"],
            "grid": {"randomization.camera_rot_wobble_deg": [1.0, 3.0], "dagger_rounds": [4, 8]},
        }
    )
    assert [r.key for r in again.runs()] == [r.key for r in runs]
    assert runs[0].args_fields() == {"dagger_rounds": 4}


def test_without_ray_the_command_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.delitem(sys.modules, "realgap.sweep.ray_runner", raising=False)
    monkeypatch.delattr(realgap.sweep, "ray_runner", raising=False)
    assert main(["sweep", str(write(tmp_path, TINY)), "--out", str(tmp_path / "o")]) == 2
    assert "pip install 'realgap[sweep]'" in capsys.readouterr().err


def test_the_shipped_sweep_file_loads():
    spec = load_sweep("sweeps/background_width.toml")
    assert len(spec.runs()) == 12 and spec.worlds[0] == "sim"


def test_the_appearance_sweep_still_measures_what_its_results_page_reports():
    """The defaults moved to its "desks" setting with 16 rounds; a setting that leaned
    on the old defaults would now train something else than the page reports."""
    spec = load_sweep("sweeps/appearance_widths.toml")
    runs = {run.setting: run for run in spec.runs() if run.seed == 0}
    before = runs["dark cloths (before)"]
    assert before.randomization()["background_value"] == [0.0, 0.18]
    assert before.randomization()["desk_texture_p"] == 0.0
    assert all("dagger_rounds" in run.args_fields() for run in runs.values())
    assert spec.speed == (15.0, 0.6) and len(runs) == 5


def test_the_grasp_desks_sweep_compares_what_the_cube_defaults_moved_between():
    spec = load_sweep("sweeps/grasp_desks.toml")
    runs = {run.setting: run for run in spec.runs() if run.seed == 0}
    before = runs["dark cloths (before)"]
    assert before.args_fields() == {"architecture": "student", "dagger_rounds": 16}
    after = runs["desks and shadows, standardized images"]
    assert after.randomization()["shadow_p"] == 0.5
    assert after.args_fields()["architecture"] == "desk_invariant"
    assert spec.task == "PickCube" and spec.speed == (15.0, 0.15) and len(spec.runs()) == 6


def test_the_grasp_webcam_sweep_adds_only_the_webcam_to_the_cube_default():
    """Its first setting must stay today's PickCube default, whatever the task's widths
    become, so the comparison it reports is the webcam widths' alone."""
    from realgap.sim.tasks import make_task

    spec = load_sweep("sweeps/grasp_webcam.toml")
    runs = {run.setting: run for run in spec.runs() if run.seed == 0}
    default = runs["desks and shadows (the default)"].randomization()
    webcam = runs["desks and shadows + the webcam's optics and sensor"].randomization()
    added = {key for key in webcam if webcam[key] != default.get(key)}
    assert added == {
        "blur_px",
        "distortion_k1",
        "vignetting",
        "white_balance",
        "sensor_noise",
        "jpeg_p",
    }
    assert default["shadow_p"] == make_task("PickCube").randomization["shadow_p"]
    # The third setting is the second's widths with the student's weights averaged.
    averaged = runs["the webcam's widths, a weight average"]
    assert averaged.randomization() == webcam
    assert averaged.args_fields()["student_average"] == 0.99
    assert "student_average" not in runs["desks and shadows (the default)"].args_fields()
    assert spec.speed == (15.0, 0.15) and len(spec.runs()) == 9


def test_a_profile_file_is_named_by_its_name_or_stem(tmp_path):
    from realgap.sweep.spec import world_label

    named = write(tmp_path, 'name = "garage"\n[servo]\nkp_scale = 0.7\n', "arm_3.toml")
    unnamed = write(tmp_path, "[servo]\nkp_scale = 0.7\n", "arm_4.toml")
    assert world_label(str(named)) == "garage" and world_label(str(unnamed)) == "arm_4"
    assert world_label("typical_so101") == "typical_so101" and world_label("sim") == "sim"
    assert world_label(f"twin:{unnamed}") == "twin:arm_4"


def test_an_interrupted_training_in_a_sweep_resumes_from_its_checkpoint(tmp_path):
    """A sweep worker killed mid-training: the next attempt continues from the run's
    checkpoint, keeping the rounds already trained, instead of starting over."""
    import signal
    import subprocess
    import time

    import torch

    from realgap.sweep import jobs

    spec = parse_sweep(
        {
            "name": "one",
            "task": "Reach",
            "seeds": [0],
            "worlds": ["sim"],
            "train": {"dagger_rounds": 8, "checkpoint_every_s": 0.001},
            "setting": [{"name": "black", "randomization.background_value": [0.0, 0.0]}],
        },
        source="inline",
    )
    (run,) = spec.runs()
    folder = tmp_path / "run"
    code = (
        "import sys, pickle; from realgap.sweep import jobs; "
        "jobs.train_run(pickle.loads(bytes.fromhex(sys.argv[1])), sys.argv[2], quick=True)"
    )
    import pickle

    worker = subprocess.Popen(
        [sys.executable, "-c", code, pickle.dumps(run).hex(), str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state = folder / "train" / "checkpoint" / "state.pt"
    deadline = time.time() + 300
    while time.time() < deadline:
        assert worker.poll() is None
        try:
            if state.exists() and torch.load(state, weights_only=False)["round"] >= 3:
                break
        except (EOFError, RuntimeError):
            pass
        time.sleep(0.05)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    rows_before = (folder / "train" / "metrics.csv").read_text().splitlines()
    result = jobs.train_run(run, folder, quick=True)
    assert result["task"] == "Reach"
    config = json.loads((folder / "train" / "config.json").read_text())
    assert config["resume"] is False  # the config is the first attempt's: it resumed
    rows_after = (folder / "train" / "metrics.csv").read_text().splitlines()
    assert rows_after[: len(rows_before) - 1] == rows_before[:-1]  # the rounds kept
    rounds = [r for r in csv.DictReader(rows_after) if r["phase"] == "student" and r["loss"]]
    assert [int(r["update"]) for r in rounds] == list(range(1, 9))  # none lost, none twice
