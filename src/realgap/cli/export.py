"""``realgap export``: write the policy as ONNX for onnxruntime + numpy inference."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("export", help="export a trained policy to ONNX")
    parser.add_argument("dir", type=Path, help="a policy folder, or a run folder holding policy/")
    parser.set_defaults(func=run)


def policy_folder(path: Path) -> Path:
    """Accept either a policy folder or a run folder that contains one."""
    if (path / "contract.json").exists():
        return path
    if (path / "policy" / "contract.json").exists():
        return path / "policy"
    raise FileNotFoundError(f"{path}: no policy found (expected contract.json or policy/)")


def run(args) -> int:
    from realgap.policy.onnx_policy import export_onnx

    path = export_onnx(policy_folder(args.dir))
    print(f"wrote {path}")
    return 0
