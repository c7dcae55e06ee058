#!/usr/bin/env bash
# The real-arm tests (tests/real): LeRobot's unmodified SO-101 driver talking to
# realgap's STS3215 emulator over a pseudo-terminal. LeRobot >= 0.5 needs
# Python >= 3.12, so they run in their own venv, .venv-lerobot (its first
# install downloads LeRobot and the torch build it pins, about 5 GB).
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
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q -e ".[real,dev]"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/real
