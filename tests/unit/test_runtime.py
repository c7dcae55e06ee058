"""Process-wide settings every realgap command shares."""


def test_every_command_runs_torch_on_one_thread(tmp_path, monkeypatch):
    # `realgap eval`, `deploy` and `adapt` ran on torch's default pool while training
    # ran on one thread: slower beside other work, and not the evaluation the twin made.
    import torch

    from realgap.cli import main

    monkeypatch.delenv("REALGAP_TORCH_THREADS", raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main(["profile", "sample", "--seed", "1", "--out", str(tmp_path / "a.toml")]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_bad_thread_count_is_one_line(tmp_path, monkeypatch, capsys):
    from realgap.cli import main

    monkeypatch.setenv("REALGAP_TORCH_THREADS", "two")
    assert main(["profile", "sample", "--seed", "1", "--out", str(tmp_path / "a.toml")]) == 2
    assert "REALGAP_TORCH_THREADS must be a whole number" in capsys.readouterr().err
