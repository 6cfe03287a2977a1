#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds the release
# preset, runs every CTest label (unit, integration, scenario), then builds the
# pure libraries with ASan+UBSan and runs their unit tests.
#
#   scripts/test.sh                  everything (what CI runs)
#   scripts/test.sh --no-sanitizers  skip the ASan+UBSan pass
#   scripts/test.sh -L unit          pass extra arguments to the release ctest
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=1
ctest_args=()
for a in "$@"; do
  case "$a" in
    --no-sanitizers) sanitizers=0 ;;
    *) ctest_args+=("$a") ;;
  esac
done

scripts/install-deps.sh

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/moonmq-ccache}"
# Paths below the checkout are hashed relative to it, so every clone of
# the repository (CI's is a fresh one) reuses the same cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
jobs="${MOONMQ_JOBS:-2}"

start=$(date +%s)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
echo "test.sh: release build done in $(( $(date +%s) - start )) s"
ctest --preset release -j "$jobs" --timeout 900 "${ctest_args[@]}"

if [ "$sanitizers" = 1 ]; then
  start=$(date +%s)
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
  echo "test.sh: asan build done in $(( $(date +%s) - start )) s"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset asan -j "$jobs" -L unit --timeout 900
fi
echo "test.sh: all tests passed"
