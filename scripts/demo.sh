#!/usr/bin/env bash
# The main job of the README: installs dependencies, builds the release
# preset, starts a local 3-broker cluster (three moonmq-node processes on
# loopback, one Raft quorum; the controller runs the balance loop with the
# built-in goal plugins), and runs moonmq-demo against it: topics that all
# start on b1, skewed producers, a consumer group, a live summary until the cluster is balanced, then the
# verification of every acknowledged record. Ctrl-C stops the demo (it still
# verifies and prints what it has; a second Ctrl-C skips the drain) and the
# brokers; they are stopped by pid on any exit.
#
#   scripts/demo.sh                  the full demo (about a minute after the build)
#   scripts/demo.sh --short          a quick run (the scenario test uses it)
#   scripts/demo.sh --shared         shared storage (docs/shared-storage.md): the brokers share
#                                    <dir>/shared, and halfway through moonmq-demo kills -9 a broker
#                                    that owns partitions and is not the Raft leader; the live view
#                                    shows its partitions failing over to the others
#   scripts/demo.sh --no-build       skip install-deps and the build (needs built programs)
#   scripts/demo.sh --bin-dir DIR    programs from DIR (default build/release/bin)
#   scripts/demo.sh --dir DIR        scratch dir for configs, data, logs (default .scratch/demo,
#                                    or $MOONMQ_DEMO_DIR); the brokers' dirs in it are wiped at start
#   scripts/demo.sh --free-ports     use free ports instead of the fixed ones
#   scripts/demo.sh ... -- ARGS      extra moonmq-demo arguments (moonmq-demo --help)
#
# Fixed ports (when all are free; else free ones are picked): broker bN has
# its client API on 8079+N, admin on 9643+N and cluster listener on 9094+N.
set -euo pipefail
cd "$(dirname "$0")/.."

short=0
shared=0
build=1
bin_dir=""
dir="${MOONMQ_DEMO_DIR:-$PWD/.scratch/demo}"
free_ports=0
demo_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --shared) shared=1 ;;
    --no-build) build=0 ;;
    --bin-dir) bin_dir="$2"; shift ;;
    --dir) dir="$2"; shift ;;
    --free-ports) free_ports=1 ;;
    --) shift; demo_args=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done

if [ "$build" = 1 ]; then
  scripts/install-deps.sh
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/moonmq-ccache}"
  # Paths below the checkout are hashed relative to it, so every clone of
  # the repository (CI's is a fresh one) reuses the same cache.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  cmake --preset release >/dev/null
  cmake --build --preset release -j "${MOONMQ_JOBS:-2}"
fi
bin_dir="${bin_dir:-$PWD/build/release/bin}"
for p in moonmq-node moonmq-demo; do
  if [ ! -x "$bin_dir/$p" ]; then
    echo "demo.sh: $bin_dir/$p is missing (build first, or drop --no-build)" >&2
    exit 1
  fi
done

ids=(b1 b2 b3)
if [ "$short" = 1 ]; then
  interval=2
  demo_defaults=(--duration-seconds 8 --until-balanced-seconds 60 --topics 2 --partitions 3 --rate 600
                 --hot-partitions 3 --summary-ms 1000 --drain-seconds 30)
  # Shared: the kill comes at 6 s, after the first moves off b1.
  if [ "$shared" = 1 ]; then demo_defaults+=(--duration-seconds 12); fi
else
  interval=5
  demo_defaults=(--duration-seconds 30 --until-balanced-seconds 180 --topics 3 --partitions 4 --rate 2000
                 --hot-partitions 3)
fi

# --- ports -----------------------------------------------------------------
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Free ports come from below the kernel's ephemeral range (32768-60999), so an
# outgoing connection can never hold one, and each is claimed with flock on
# /tmp/moonmq-ports/<port> for the life of this script: the test harness
# claims its ports there too (tests/support/ports.hpp). The port is left in
# $port (no subshell, so the lock's file descriptor stays with this script).
taken=" "
free_port() {
  local p fd
  mkdir -p /tmp/moonmq-ports 2>/dev/null && chmod 1777 /tmp/moonmq-ports 2>/dev/null
  while :; do
    p=$(( 20000 + RANDOM % 12768 ))
    [[ "$taken" == *" $p "* ]] && continue
    exec {fd}>>"/tmp/moonmq-ports/$p" || continue
    if flock -n "$fd" && ! in_use "$p"; then
      taken+="$p "
      port=$p
      return
    fi
    exec {fd}>&-
  done
}
client_port=() admin_port=() cluster_port=()
if [ "$free_ports" = 0 ]; then
  for i in 0 1 2; do
    client_port[i]=$((8080 + i)); admin_port[i]=$((9644 + i)); cluster_port[i]=$((9095 + i))
    for p in "${client_port[i]}" "${admin_port[i]}" "${cluster_port[i]}"; do
      if in_use "$p"; then
        echo "demo.sh: port $p is in use; using free ports instead"
        free_ports=1
      fi
    done
  done
fi
if [ "$free_ports" = 1 ]; then
  for i in 0 1 2; do
    free_port; client_port[i]=$port
    free_port; admin_port[i]=$port
    free_port; cluster_port[i]=$port
  done
fi
# Kafka listeners: always free ports (never the fixed 9092, which a
# parallel test run or a local Kafka may hold), one per broker.
kafka_port=()
for i in 0 1 2; do free_port; kafka_port[i]=$port; done

# --- configs ---------------------------------------------------------------
mkdir -p "$dir"
rm -rf "$dir"/b1 "$dir"/b2 "$dir"/b3 "$dir"/b1.log "$dir"/b2.log "$dir"/b3.log "$dir"/shared
# Shared storage: one partition directory every broker reads, so a move
# copies nothing and a dead broker's partitions fail over. The lease keys
# make that failover fast and satisfy the rule checked at load
# (docs/configuration.md): SessionTimeoutMs 2500 >= max(ElectionTimeoutMs
# 1000, LeaseMs 1000) + LeaseMs 1000 + LeaseMarginMs 100, LeaseMs >
# HeartbeatMs. A broker silent 2.5 s is fenced, and the controller hands
# its partitions over at its next check (every second).
storage_json="" raft_json=""
if [ "$shared" = 1 ]; then
  mkdir -p "$dir/shared"
  storage_json="
    \"Storage\": { \"SharedDir\": \"$dir/shared\" },"
  raft_json="
      \"Raft\": { \"ElectionTimeoutMs\": 1000, \"HeartbeatMs\": 200, \"SessionTimeoutMs\": 2500,
                \"LeaseMs\": 1000, \"LeaseMarginMs\": 100 },"
fi
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
for i in 0 1 2; do
  peers=""
  for j in 0 1 2; do
    [ "$i" = "$j" ] && continue
    peers+="${peers:+,
        }{ \"Id\": \"${ids[j]}\", \"Address\": \"127.0.0.1:${cluster_port[j]}\", \"ClientAddress\": \"127.0.0.1:${client_port[j]}\", \"KafkaAddress\": \"127.0.0.1:${kafka_port[j]}\" }"
  done
  mkdir -p "$dir/${ids[i]}"
  cat > "$dir/${ids[i]}/appsettings.json" <<JSON
{
  // Generated by scripts/demo.sh: broker ${ids[i]} of a local 3-broker cluster.
  "Server": {
    "Host": "127.0.0.1", "Port": ${client_port[i]},
    "DataDir": "$dir/${ids[i]}/data",
    "Admin": { "Host": "127.0.0.1", "Port": ${admin_port[i]} },
    "Kafka": { "Enabled": true, "Host": "127.0.0.1", "Port": ${kafka_port[i]} },${storage_json}
    "Cluster": {
      "BrokerId": "${ids[i]}",
      "Host": "127.0.0.1", "Port": ${cluster_port[i]},
      "Token": "$token", "PeerTimeout": 2,${raft_json}
      // Copies at 256 KiB/s per move, so that moves take seconds and the
      // demo's progress bars have something to show (with --shared a move
      // copies nothing).
      "MoveThrottleBytesPerSec": 262144,
      // Every topic starts on the broker it is created through (b1), not
      // spread as it would be by default, so that the balance loop has
      // something to spread while the demo watches.
      "TopicPlacement": "proposer",
      "Peers": [
        $peers
      ]
    },
    // Every broker has the same balance loop settings; the loop of the Raft
    // leader (the controller) is the one that acts (docs/balancer.md), with
    // the built-in goal plugins of the default GoalsDir (<dir of
    // moonmq-node>/plugins). The network goals wake up at 16 KiB/s per
    // broker instead of 1 MiB/s so that the demo's traffic counts.
    "Autobalance": {
      "Enabled": true, "DryRun": false, "IntervalSeconds": $interval,
      "Goals": { "NW_IN": { "DetectThreshold": 16384 }, "NW_OUT": { "DetectThreshold": 16384 } }
    }
  }
}
JSON
done

# --- brokers ---------------------------------------------------------------
pids=()
interrupted=0
stop_brokers() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "demo.sh: broker pid $pid did not stop within 10 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  [ ${#pids[@]} -gt 0 ] && echo "demo.sh: brokers stopped (pids ${pids[*]}); configs, data and logs in $dir"
  pids=()
}
trap stop_brokers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for i in 0 1 2; do
  # setsid: Ctrl-C in the terminal must not reach the brokers while the demo
  # still drains and verifies. (In a script the child is no process-group
  # leader, so setsid does not fork and $! is the broker's pid.)
  setsid "$bin_dir/moonmq-node" --config "$dir/${ids[i]}/appsettings.json" >"$dir/${ids[i]}.log" 2>&1 </dev/null &
  pids+=($!)
  # --shared: moonmq-demo kills one on purpose; out of the job table, bash
  # does not report that as "Killed" (stop_brokers waits by polling).
  if [ "$shared" = 1 ]; then disown "$!"; fi
done
echo "demo.sh: started brokers ${ids[*]} (pids ${pids[*]}); logs in $dir/b*.log"

health() {  # prints the /health body of admin port $1, or fails
  curl -s --max-time 2 "http://127.0.0.1:$1/health"
}
for i in 0 1 2; do
  ok=0
  for _ in $(seq 1 300); do
    if health "${admin_port[i]}" | grep -q "\"broker_id\":\"${ids[i]}\""; then ok=1; break; fi
    if ! kill -0 "${pids[i]}" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if [ "$ok" = 0 ]; then
    echo "demo.sh: broker ${ids[i]} did not become healthy; its log:" >&2
    tail -n 30 "$dir/${ids[i]}.log" >&2
    exit 1
  fi
done
brokers=""
for i in 0 1 2; do
  brokers+="${brokers:+,}${ids[i]}=127.0.0.1:${client_port[i]}/127.0.0.1:${admin_port[i]}"
done
echo "demo.sh: cluster healthy: $brokers (balance loop every ${interval} s)"
if [ "$shared" = 1 ]; then
  echo "demo.sh: shared storage in $dir/shared: a broker silent for 2.5 s is fenced and its partitions fail over"
fi
echo "demo.sh: web console: http://127.0.0.1:${admin_port[0]}/ (docs/console.md)"
echo "demo.sh: while it runs, try: curl -s 127.0.0.1:${admin_port[0]}/admin/cluster | python3 -m json.tool"
echo "demo.sh:                     curl -s 127.0.0.1:${admin_port[0]}/admin/balancer | python3 -m json.tool"
echo "demo.sh:                     kcat -L -b 127.0.0.1:${kafka_port[0]}   # the Kafka listener (docs/kafka.md)"
echo "demo.sh: Ctrl-C stops it."

# From here Ctrl-C reaches moonmq-demo (same process group), which stops the
# traffic, verifies, prints and exits; the script then stops the brokers (they
# run in sessions of their own) through the EXIT trap.
trap 'interrupted=1' INT
if [ "$shared" = 1 ]; then
  # moonmq-demo picks the broker (one that owns partitions and is not the
  # Raft leader) and kills it halfway through --duration-seconds.
  broker_pids=""
  for i in 0 1 2; do broker_pids+="${broker_pids:+,}${ids[i]}=${pids[i]}"; done
  demo_defaults+=(--kill-broker-at 0.5 --broker-pids "$broker_pids")
fi
set +e
"$bin_dir/moonmq-demo" --brokers "$brokers" "${demo_defaults[@]}" "${demo_args[@]}"
rc=$?
set -e
[ "$interrupted" = 1 ] && echo "demo.sh: interrupted"
exit "$rc"
