"""A recurrent Stack student end to end: trained by `realgap train --quick`, exported to
ONNX, run on a fake arm through the bridge with its memory forgotten at every episode."""

import json

from realgap.cli import main
from realgap.policy.onnx_policy import OnnxPolicy


def test_a_recurrent_student_trains_exports_and_deploys_forgetting_between_episodes(
    tmp_path, monkeypatch
):
    # Its own camera lock: a test must not lean on one another test left in the home.
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    assert main(["camera", "lock", "--world", "fake", "--profile", "typical_so101"]) == 0
    run = tmp_path / "run"
    assert main(["train", "StackCube", "--out", str(run), "--quick"]) == 0
    contract = json.loads((run / "policy" / "contract.json").read_text())
    assert contract["architecture"] == "recurrent"
    assert main(["export", str(run / "policy")]) == 0

    resets, real_reset = [], OnnxPolicy.reset

    def counted_reset(self):
        resets.append(self.memory is not None)  # whether there was something to forget
        real_reset(self)

    monkeypatch.setattr(OnnxPolicy, "reset", counted_reset)
    layout = tmp_path / "two_spots.toml"
    layout.write_text(
        'name = "two"\nframe = "arm"\n[[spot]]\nname = "a"\ncube = [0.13, -0.07]\n'
        'target = [0.13, 0.04]\n[[spot]]\nname = "b"\ncube = [0.2, 0.0]\ntarget = [0.2, 0.1]\n'
    )
    out = tmp_path / "eval.json"
    argv = ["eval", str(run / "policy"), "--world", "fake", "--layout", str(layout)]
    assert main([*argv, "--trials", "2", "--steps", "6", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["overall"]["trials"] >= 1
    # One reset per episode; the second forgets what the first episode left behind.
    assert len(resets) == 2 and resets[1]
