#!/usr/bin/env bash
# Takes a PNG of the web console (docs/console.md) on the demo cluster:
# starts scripts/demo.sh (3 brokers with Raft, skewed traffic, a consumer
# group, the balance loop moving partitions), waits until the balancer is
# moving partitions, screenshots broker b1's console in headless Chromium
# (tests/console/console.test.js screenshot) and stops the demo.
#
#   scripts/console-screenshot.sh                   writes docs/console.png
#   scripts/console-screenshot.sh --out FILE        another file
#   scripts/console-screenshot.sh --wait-seconds N  seconds of traffic before the shot (default 3:
#                                                   the balancer's first moves are copying then)
#   scripts/console-screenshot.sh --no-build        skip install-deps and the build (demo.sh --no-build)
set -euo pipefail
cd "$(dirname "$0")/.."

out="$PWD/docs/console.png"
wait_seconds=3
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$(realpath -m "$2")"; shift ;;
    --wait-seconds) wait_seconds="$2"; shift ;;
    --no-build) build=0 ;;
    *) echo "console-screenshot.sh: unknown argument '$1' (see the top of this file)" >&2; exit 2 ;;
  esac
  shift
done

dir="$PWD/.scratch/console-screenshot"
mkdir -p "$dir"
demo_flags=(--free-ports --dir "$dir")
[ "$build" = 1 ] || demo_flags+=(--no-build)
# demo.sh installs the dependencies and builds first unless --no-build.
scripts/demo.sh "${demo_flags[@]}" -- --duration-seconds $((wait_seconds + 15)) --no-redraw \
  >"$dir/demo.out" 2>&1 &
demo=$!
stop_demo() {
  # moonmq-demo stops its traffic on SIGINT and verifies; demo.sh then stops
  # the brokers by their pids.
  local child
  # (Only moonmq-demo: the brokers are demo.sh's children too.)
  for child in $(pgrep -P "$demo" -x moonmq-demo || true); do kill -INT "$child" 2>/dev/null || true; done
  wait "$demo" 2>/dev/null || true
}
trap stop_demo EXIT

admin=""
while [ -z "$admin" ] && kill -0 "$demo" 2>/dev/null; do
  sleep 0.2
  admin=$(sed -n 's/^demo.sh: cluster healthy: b1=[^/]*\/\([0-9.:]*\),.*/\1/p' "$dir/demo.out")
done
if [ -z "$admin" ]; then
  echo "console-screenshot.sh: the demo cluster did not start:" >&2
  cat "$dir/demo.out" >&2
  exit 1
fi
echo "console-screenshot.sh: demo cluster up, b1's console at http://$admin/; shooting in $wait_seconds s"
sleep "$wait_seconds"
NODE_PATH="${MOONMQ_NPM_DIR:-$HOME/.cache/moonmq-npm}/node_modules" \
  node tests/console/console.test.js screenshot --url "http://$admin" --out "$out" --wait-ms 2000
echo "console-screenshot.sh: wrote $out"
