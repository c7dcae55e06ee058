#!/usr/bin/env bash
# The real-arm tests (tests/real): LeRobot's unmodified SO-101 driver talking to
# realgap's STS3215 emulator over a pseudo-terminal. LeRobot >= 0.5 needs
# Python >= 3.12, so they run in their own venv, .venv-lerobot (its first
# install downloads LeRobot and the torch build it pins, about 6 GB).
# REALGAP_LEROBOT_PYTHON picks the interpreter; REALGAP_SKIP_LEROBOT_TESTS=1 skips.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${REALGAP_SKIP_LEROBOT_TESTS:-0}" = "1" ]; then
  echo "tools/test-lerobot.sh: skipped (REALGAP_SKIP_LEROBOT_TESTS=1)"
  exit 0
fi
python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }
PY="${REALGAP_LEROBOT_PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python3 \
                   "$HOME"/.pyenv/versions/3.13*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
      PY="$candidate"
      break
    fi
  done
fi
if [ -z "$PY" ]; then
  echo "tools/test-lerobot.sh: no Python >= 3.12 found; set REALGAP_LEROBOT_PYTHON" >&2
  exit 1
fi
VENV=.venv-lerobot
# LeRobot pins a CUDA build of torch (no CPU wheel for Python 3.12 on PyPI): about
# 6 GB installed plus 3 GB of wheels while pip unpacks them (peak 8.5 GiB
# measured). A CI run once died here with "No space left on device", so: keep
# no pip cache (it would hold a second copy of the wheels), unpack on the venv's
# own disk rather than in a /tmp that may be a small tmpfs, skip the dev extra
# (Ray is not needed here), and say up front when the disk is too small.
NEED_GB=9
if [ ! -x "$VENV/bin/pytest" ]; then
  free_gb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
  if [ "$free_gb" -lt "$NEED_GB" ]; then
    echo "tools/test-lerobot.sh: installing LeRobot's venv needs about $NEED_GB GB free" \
         "on this disk; $free_gb GB is free. Free some space, or set" \
         "REALGAP_SKIP_LEROBOT_TESTS=1 to skip tests/real." >&2
    exit 1
  fi
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
mkdir -p "$VENV/pip-tmp"
TMPDIR="$PWD/$VENV/pip-tmp" PIP_NO_CACHE_DIR=1 \
  "$VENV/bin/pip" install -q -e ".[real]" "pytest>=8"
rm -rf "$VENV/pip-tmp"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/real
