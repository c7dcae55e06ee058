#!/usr/bin/env bash
# Run the tests that train a network and check what it learned (marker `learning`)
# under every CPU capability this machine supports, so that a test which passes only
# on its author's float kernels is caught before it lands.
#
# Training results depend on the CPU's floating-point kernels: torch dispatches to
# AVX-512, AVX2 or plain kernels by what the CPU has (ATEN_CPU_CAPABILITY picks one),
# and MKL likewise (MKL_ENABLE_INSTRUCTIONS). A newcomer's CPU may differ from ours.
#
#   tools/check-cpu-portability.sh            the learning tests, default tier
#   tools/check-cpu-portability.sh --slow     also the slow learning tests
#   tools/check-cpu-portability.sh --all      the whole default suite (minutes each)
#   tools/check-cpu-portability.sh -- ARGS    extra pytest arguments
set -euo pipefail
cd "$(dirname "$0")/.."

selection=(-m "learning and not slow")
while [ $# -gt 0 ]; do
  case "$1" in
    --slow) selection=(-m "learning"); shift ;;
    --all) selection=(-m "not slow"); shift ;;
    --) shift; break ;;
    *) echo "usage: $0 [--slow|--all] [-- pytest args]" >&2; exit 2 ;;
  esac
done

# What torch's dispatcher would pick here; the lower tiers always work.
native=$(python -c "import torch; print(torch.backends.cpu.get_cpu_capability())")
case "$native" in
  AVX512*) capabilities=(default avx2 avx512) ;;
  AVX2) capabilities=(default avx2) ;;
  *) capabilities=(default) ;;
esac
echo "torch's native CPU capability here: $native; checking: ${capabilities[*]} and MKL AVX2"

failed=()
extra=("$@")
run() {
  local setting="$1"
  echo
  echo "=== $setting"
  if env "$setting" python -c "import torch; print('torch runs', torch.backends.cpu.get_cpu_capability())" &&
    env "$setting" python -m pytest -q -p no:cacheprovider "${selection[@]}" "${extra[@]}"; then
    echo "=== $setting: passed"
  else
    failed+=("$setting")
  fi
}
for capability in "${capabilities[@]}"; do
  run "ATEN_CPU_CAPABILITY=$capability"
done
run "MKL_ENABLE_INSTRUCTIONS=AVX2"

echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed under: ${failed[*]}"
  exit 1
fi
echo "passed under every capability: ${capabilities[*]}, MKL AVX2"
