"""The command line refuses bad input with one line, before connecting to anything, and
keeps tracebacks for real bugs."""

import json
import os
import re
import signal
import time

import pytest

from realgap.cli import main
from realgap.cli.task_help import TASK_HELP
from realgap.errors import ConfigError
from realgap.policy.checkpoint import save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy
from realgap.sim.tasks import ALIASES, TASKS

CONTRACT = PolicyContract(
    task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
)


@pytest.fixture
def policy(tmp_path, monkeypatch):
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    return str(save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT))


def refused(capsys, argv, *named) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    for name in named:
        assert name in err, err
    return err


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--world", "sim", "--profile", "typical_so101"], "--profile"),
        (["--world", "sim", "--realtime"], "--realtime"),
        (["--world", "sim", "--steps", "30"], "--steps"),
        (["--world", "fake", "--steps", "0"], "--steps must be at least 1"),
        (["--world", "fake", "--hz", "0"], "--hz must be positive"),
        (["--world", "fake", "--trials", "0"], "--trials"),
    ],
)
def test_eval_refuses_options_that_would_be_ignored_or_cannot_work(capsys, policy, extra, named):
    refused(capsys, ["eval", policy, *extra], named)


def test_deploy_with_no_episodes_is_refused_before_connecting(capsys, policy, monkeypatch):
    import realgap.cli.deploy as deploy

    monkeypatch.setattr(deploy, "open_world", lambda *a, **k: pytest.fail("connected"))
    refused(capsys, ["deploy", policy, "--episodes", "0"], "--episodes")


def test_outputs_are_checked_before_the_arm_moves(capsys, policy, tmp_path, monkeypatch):
    import realgap.cli.deploy as deploy

    monkeypatch.setattr(deploy, "open_world", lambda *a, **k: pytest.fail("connected"))
    refused(capsys, ["eval", policy, "--world", "fake", "--json", str(tmp_path)], "is a folder")
    (tmp_path / "file").write_text("")
    out = str(tmp_path / "file" / "run")
    refused(capsys, ["deploy", policy, "--out", out], "cannot write")


def test_an_earlier_run_is_refused_unless_resumed_or_overwritten(capsys, policy, tmp_path):
    out = tmp_path / "eval"
    argv = ["eval", policy, "--world", "sim", "--trials", "13", "--out", str(out)]
    assert main(argv) == 0
    first = json.loads((out / "eval_sim.json").read_text())
    assert first["partial"] is False and len(first["episodes"]) == 13
    refused(capsys, argv, "--resume", "--overwrite")
    assert main([*argv, "--overwrite"]) == 0
    assert main([*argv, "--resume"]) == 0


def test_the_task_help_names_every_registered_task_and_alias():
    named = set(re.findall(r"[A-Z][A-Za-z]+", TASK_HELP))
    assert named == set(TASKS) | set(ALIASES)


def test_task_names_are_case_insensitive(capsys, tmp_path):
    assert main(["train", "reach", "--out", str(tmp_path), "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["task"] == "Reach"


def test_bad_calibration_and_profile_files_are_one_line(capsys, policy, tmp_path):
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"twin": {"servo": {"kp_scael": 1.0}}}))
    args = ["eval", policy, "--world", "sim", "--trials", "13", "--calibration"]
    refused(capsys, [*args, str(calibration)], "calibration.json", "servo.kp_scael")
    refused(capsys, ["eval", policy, "--world", "fake", "--profile", str(tmp_path)], "folder")


@pytest.mark.parametrize(
    "setting", [["--exposure", "-1"], ["--exposure", "nan"], ["--exposure", "1e9"]]
)
def test_camera_lock_refuses_settings_no_camera_has(capsys, policy, setting):
    refused(capsys, ["camera", "lock", "--world", "fake", "--profile", "nominal", *setting])


def test_camera_lock_refuses_a_blind_camera(capsys, policy):
    argv = ["camera", "lock", "--world", "fake", "--profile", "nominal", "--gain", "0"]
    refused(capsys, argv, "sees nothing")


def test_sigterm_exits_143_and_ctrl_c_130(monkeypatch, capsys):
    import realgap.cli.view as view

    def terminated(args):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this

    monkeypatch.setattr(view, "run", terminated)
    assert main(["view", "Reach", "--out", "x.png"]) == 143
    assert "SIGTERM" in capsys.readouterr().err

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(view, "run", interrupted)
    assert main(["view", "Reach", "--out", "x.png"]) == 130
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_user_errors_are_one_line_and_bugs_keep_their_traceback(monkeypatch, capsys):
    import realgap.cli.view as view

    monkeypatch.setattr(view, "run", lambda args: (_ for _ in ()).throw(ConfigError("bad x")))
    assert main(["view", "Reach", "--out", "x.png"]) == 2
    assert "error: bad x" in capsys.readouterr().err
    monkeypatch.setattr(view, "run", lambda args: (_ for _ in ()).throw(ValueError("a bug")))
    with pytest.raises(ValueError, match="a bug"):
        main(["view", "Reach", "--out", "x.png"])


def test_diagnose_attribute_names_the_one_difference(capsys, policy, tmp_path):
    twin = tmp_path / "arm.toml"
    twin.write_text("[camera]\nbackground_rgb = [0.7, 0.7, 0.7]\n")
    out = tmp_path / "attribution"
    argv = ["diagnose", "attribute", policy, str(twin), "--trials", "13", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads((out / "attribution.json").read_text())
    assert [row["difference"] for row in result["differences"]] == ["camera.background_rgb"]
    assert result["nominal"]["trials"] == result["calibrated"]["trials"] == 9
    assert "Gap attribution" in (out / "attribution.section.html").read_text()
    refused(capsys, [*argv[:4], "--trials", "0"], "--trials")


HOSTILE = [
    ("twin.toml", "[servo]\nkp_scale = nan\n", ["--twin"], "servo.kp_scale"),
    ("twin.toml", "servo = [1, 2]\n", ["--twin"], "servo"),
    ("twin.json", "[1, 2]", ["--twin"], "expected a JSON object"),
    ("widths.toml", "[randomization]\nkp_scale = [[1], [2]]\n", ["--randomization"], "kp_scale"),
    (
        "widths.toml",
        "[randomization]\naction_fraction = [0, 2]\n",
        ["--randomization"],
        "action_fraction",
    ),
    ("widths.toml", "[randomization]\nshadow_p = 3\n", ["--randomization"], "shadow_p"),
]


@pytest.mark.parametrize("name, text, flag, named", HOSTILE)
def test_hostile_twin_and_width_files_are_one_line_even_in_a_dry_run(
    capsys, tmp_path, name, text, flag, named
):
    path = tmp_path / name
    path.write_text(text)
    argv = ["train", "Reach", "--out", str(tmp_path / "run"), *flag, str(path), "--dry-run"]
    refused(capsys, argv, str(path), named)


def test_hostile_sweep_and_adapt_inputs_are_one_line(capsys, policy, tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        "name = 'x'\ntask = 'Reach'\nseeds = [0]\nworlds = ['sim']\n"
        "[train]\ndagger_rounds = 'ten'\n[[setting]]\nname = 'a'\n"
    )
    refused(capsys, ["sweep", str(sweep), "--out", str(tmp_path / "s")], "train.dagger_rounds")
    out = str(tmp_path / "adapted")
    refused(capsys, ["adapt", policy, "--out", out, "--budget", "nan"], "--budget")
    refused(capsys, ["adapt", policy, "--out", out, "--resume"], "no adapt run to resume")
    refused(capsys, ["adapt", policy, "--out", out, "--hz", "-3"], "--hz")


def test_version_names_the_commit(capsys):
    import subprocess

    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out.strip()
    head = subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert out.startswith("realgap 0.") and head and head in out
