"""The main job end to end: `realgap demo --quick`, then eval, deploy and report on its output."""

import json
import os
import shutil
import subprocess

import pytest

from realgap.bridge.recording import load_episodes
from realgap.cli import main


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["demo", "--quick", "--out", str(out)]) == 0
    return out


def test_demo_writes_summary_in_the_documented_shape(demo):
    summary = json.loads((demo / "summary.json").read_text())
    assert summary["task"] == "Reach"
    for world in ("sim", "fake", "fake_reference_pitfalls"):
        entry = summary["worlds"][world]
        assert 0 <= entry["success_rate"] <= 1 and entry["trials"] == 9
        low, high = entry["ci95"]
        assert low <= entry["success_rate"] <= high
    assert set(summary["gap"]) == {"gap", "ci95"} and "fake_reference_pitfalls" in summary["gaps"]
    assert (demo / "report.html").exists()
    # The policy it names is one `realgap eval` accepts.
    out = demo / "again.json"
    assert (
        main(["eval", summary["policy"], "--world", "sim", "--trials", "13", "--json", str(out)])
        == 0
    )
    result = json.loads(out.read_text())
    assert set(result["overall"]) >= {"success_rate", "ci95", "trials"}
    assert len(result["spots"]) == 13 and result["overall"]["trials"] == 9


def test_eval_in_an_arms_twin_and_under_a_randomization(demo, capsys):
    policy = json.loads((demo / "summary.json").read_text())["policy"]
    twin = demo / "arm.toml"
    # A light-grey desk: the demo's policy, trained on black, is blind on it.
    twin.write_text("[camera]\nbackground_rgb = [0.7, 0.7, 0.7]\n")
    args = ["eval", policy, "--world", "sim", "--trials", "13"]
    assert main([*args, "--twin", str(twin), "--out", str(demo / "twin_eval")]) == 0
    result = json.loads((demo / "twin_eval" / "eval_sim_calibrated.json").read_text())
    assert result["world"] == "sim (calibrated)" and result["overall"]["trials"] == 9
    # The policy saw the twin's desk: its first frames are far brighter than on black.
    first = [
        e.images[0].mean() for e in load_episodes(demo / "twin_eval" / "episodes_sim_calibrated")
    ]
    black = [e.images[0].mean() for e in load_episodes(demo / "eval" / "episodes_sim")]
    assert min(first) > max(black) + 50
    widths = demo / "widths.toml"
    widths.write_text("[randomization]\nkp_scale = [0.9, 1.1]\n")
    assert main([*args, "--randomization", str(widths), "--out", str(demo / "dr")]) == 0
    assert (demo / "dr" / "eval_sim_randomized.json").exists()
    assert main([*args[:2], "--world", "fake", "--twin", str(twin)]) == 2
    assert "--world sim" in capsys.readouterr().err


def test_eval_on_the_fake_arm_records_every_episode(demo, monkeypatch):
    monkeypatch.setenv("REALGAP_HOME", str(demo / "home"))
    policy = json.loads((demo / "summary.json").read_text())["policy"]
    args = ["camera", "lock", "--world", "fake", "--profile", "nominal"]
    assert main(args) == 0
    out = demo / "fake_eval"
    args = ["eval", policy, "--world", "fake", "--profile", "nominal", "--trials", "13"]
    assert main([*args, "--steps", "30", "--out", str(out), "--json", str(out / "r.json")]) == 0
    result = json.loads((out / "r.json").read_text())
    assert result["world"] == "fake:nominal" and result["timing"]["steps"] == 13 * 30
    assert len(list((out / "episodes_fake_nominal").glob("episode_*.npz"))) == 13


def test_deploy_command_runs_and_refuses_a_missing_lock(demo, monkeypatch, capsys):
    monkeypatch.setenv("REALGAP_HOME", str(demo / "empty_home"))
    policy = json.loads((demo / "summary.json").read_text())["policy"]
    assert main(["deploy", policy, "--world", "fake", "--episodes", "1", "--steps", "5"]) == 2
    assert "realgap camera lock" in capsys.readouterr().err


def chromium() -> str:
    """The headless browser; CI installs Debian's chromium and must never skip this."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Chromium: .ci/run installs Debian's chromium")
        pytest.skip("no Chromium installed (Debian: apt-get install chromium)")
    return browser


def render_dom(page, profile) -> str:
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120).stdout


def test_report_renders_in_headless_chromium(demo, tmp_path):
    chromium()
    assert main(["report", str(demo)]) == 0
    dom = render_dom(demo / "report.html", tmp_path / "profile")
    assert "Reality gap" in dom and "fake:typical_so101" in dom
    images = int(dom.split('data-images="')[1].split('"')[0])
    decoded = int(dom.split('data-decoded="')[1].split('"')[0])
    assert images >= 5 and decoded == images  # every embedded figure decoded


def test_report_of_an_interrupted_eval_shows_it_as_partial(demo, tmp_path, monkeypatch):
    """Ctrl-C in episode 5 of a fake-arm eval: the finished episodes are kept, the eval
    file says partial, and the report (rendered in Chromium) says so too."""
    import realgap.bridge.deploy as deploy

    chromium()
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    policy = json.loads((demo / "summary.json").read_text())["policy"]
    assert main(["camera", "lock", "--world", "fake", "--profile", "nominal"]) == 0
    real_episode = deploy.run_episode

    def interrupt_the_fifth(*args, calls=[]):  # noqa: B006 - a call counter
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real_episode(*args)

    monkeypatch.setattr(deploy, "run_episode", interrupt_the_fifth)
    out = tmp_path / "run"
    args = ["eval", policy, "--world", "fake", "--profile", "nominal", "--trials", "13"]
    assert main([*args, "--steps", "20", "--out", str(out)]) == 130
    result = json.loads((out / "eval_fake_nominal.json").read_text())
    assert result["partial"] and len(result["episodes"]) == 4 and result["planned_trials"] == 13
    assert result["stopped"].startswith("KeyboardInterrupt")
    assert main(["report", str(out)]) == 0
    dom = render_dom(out / "report.html", tmp_path / "profile")
    assert "partial: 4 of 13 episodes" in dom and "stopped early" in dom
