#!/usr/bin/env bash
# kafka_bench — the Kafka listener against the HTTP produce path and the disk.
#
# Starts one moonmq-node (Kafka listener on, every port ephemeral, read from
# its node.ready line), then on the same disk and in the same run:
#   1. raw limit    : the values' bytes written in 256 KiB chunks with an
#                     fdatasync after each (bench/common/raw_disk.hpp), MB/s
#   2. kafka produce: kcat (librdkafka) -P of N values of B bytes to topic
#                     "bench" (1 partition), acks=all, linger.ms=5,
#                     batch.num.messages=10000
#   3. http produce : the same N values to topic "bench-http" (1 partition)
#                     with moonmqctl produce: one keep-alive connection,
#                     POST /v1/topics/bench-http/records?acks=leader, 500 per request,
#                     in the binary records form (moonmqctl's default), 8
#                     requests pipelined (--in-flight 8); then the
#                     same with --in-flight 1 (one request at a time) to
#                     "bench-http1", and again to "bench-json" with --form json
#                     (--in-flight 8)
#   4. kafka fetch  : kcat -C of topic "bench" from the beginning to the end;
#                     http fetch: moonmqctl consume of "bench-http" (binary
#                     form) and of "bench-json" (--form json), 1000 records
#                     per request, into wc -lc
#   5. kafka spread : the same N values with kcat -P to topic "wide" of W
#                     partitions (no -p, sticky.partitioning.linger.ms=0: every
#                     record to a random partition), as step 2 otherwise; the
#                     ratio spread/produce of the same run (issue 15 target:
#                     >= 0.8 for 1,000 partitions)
#   6. latency      : produce_latency.py: fdatasync p99 of the scratch disk,
#                     then librdkafka at R msg/s for S seconds, acks=all,
#                     64 requests in flight; p99 produce / p99 fdatasync
#                     (issue 15 target: <= 3 at 5,000 msg/s)
#   7. redis xadd   : with --redis, a redis-server (Debian's redis-server
#                     package) with its append-only file in the scratch dir
#                     and appendfsync always (an fsync before each reply),
#                     and redis-benchmark sending the N values' size as XADD
#                     on one connection, 500 and then 4,000 commands
#                     pipelined (moonmqctl's 500 per request, and its 8
#                     requests in flight); http produce / the faster of the
#                     two (issue 20 target: >= 1.5)
# and prints records/s and MB/s (MB = 10^6 bytes of values) of each, the
# produce figures also as a fraction of the raw limit. Fails (exit 1) when a
# log end offset (HTTP API) or the number/bytes of consumed records differ
# from N.
#
#   bench/kafka/kafka_bench.sh [--bin-dir DIR] [--records N] [--value-bytes B] [--dir D]
#                              [--wide W] [--rate R] [--latency-seconds S] [--redis]
#
#   --bin-dir DIR     moonmq-node and moonmqctl (default build/release/bin)
#   --records N       records per run (default 200000)
#   --value-bytes B   bytes per value, lowercase letters (default 1024)
#   --dir D           scratch dir is created inside D (default: under $TMPDIR);
#                     removed at the end, kept when the run fails
#   --wide W          partitions of topic "wide" (default 1000)
#   --rate R          records/s of the latency run (default 5000)
#   --latency-seconds S  length of the latency run (default 10; 0 skips it)
#   --redis           also run step 7 (needs redis-server and redis-benchmark:
#                     apt-get install redis-server)
#   --help            this text
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

bin_dir="$repo/build/release/bin"
records=200000
value_bytes=1024
parent=""
wide=1000
rate=5000
latency_seconds=10
redis=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir="$2"; shift ;;
    --records) records="$2"; shift ;;
    --value-bytes) value_bytes="$2"; shift ;;
    --dir) parent="$2"; shift ;;
    --wide) wide="$2"; shift ;;
    --rate) rate="$2"; shift ;;
    --latency-seconds) latency_seconds="$2"; shift ;;
    --redis) redis=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "kafka_bench: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done

die() { echo "kafka_bench: $*" >&2; exit 1; }
[[ "$records" =~ ^[1-9][0-9]*$ ]] || die "--records must be a positive integer"
[[ "$value_bytes" =~ ^[1-9][0-9]*$ ]] || die "--value-bytes must be a positive integer"
[[ "$wide" =~ ^[1-9][0-9]*$ ]] || die "--wide must be a positive integer"
[[ "$rate" =~ ^[1-9][0-9]*$ ]] || die "--rate must be a positive integer"
[[ "$latency_seconds" =~ ^[0-9]+$ ]] || die "--latency-seconds must be a non-negative integer"
for p in moonmq-node moonmqctl; do
  [ -x "$bin_dir/$p" ] || die "$bin_dir/$p is missing (build it, or pass --bin-dir)"
done
for t in kcat curl python3; do
  command -v "$t" >/dev/null || die "$t is not installed (scripts/install-deps.sh installs it)"
done
if [ "$redis" = 1 ]; then
  for t in redis-server redis-benchmark redis-cli; do
    command -v "$t" >/dev/null || die "$t is not installed (apt-get install redis-server), needed by --redis"
  done
fi
if [ "$latency_seconds" -gt 0 ]; then
  /usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null ||
    die "python3-confluent-kafka is not installed (scripts/install-deps.sh installs it; --latency-seconds 0 skips the latency run)"
fi

if [ -n "$parent" ]; then
  mkdir -p "$parent"
  dir=$(mktemp -d "$parent/kafka_bench.XXXXXX")
else
  dir=$(mktemp -d -t kafka_bench.XXXXXX)
fi

# --- node ---------------------------------------------------------------------
node_pid=""
redis_pid=""
ok=0
cleanup() {
  if [ -n "$redis_pid" ]; then
    kill -TERM "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  if [ -n "$node_pid" ]; then
    # SIGTERM, then SIGKILL from a watchdog after 10 s; `wait` reaps the node
    # (inside an EXIT trap bash may not reap it by itself, so `kill -0` would
    # see a zombie).
    kill -TERM "$node_pid" 2>/dev/null || true
    (sleep 10; echo "kafka_bench: the node (pid $node_pid) did not stop within 10 s of SIGTERM; killing it" >&2
     kill -KILL "$node_pid" 2>/dev/null) &
    local watchdog=$!
    wait "$node_pid" 2>/dev/null || true
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
  fi
  if [ "$ok" = 1 ]; then
    rm -rf "$dir"
  else
    echo "kafka_bench: failed; node log and data kept in $dir" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$bin_dir/moonmq-node" \
  -s "Server.DataDir=$dir/data" -s Server.Host=127.0.0.1 -s Server.Port=0 \
  -s Server.Admin.Host=127.0.0.1 -s Server.Admin.Port=0 \
  -s Server.Kafka.Enabled=true -s Server.Kafka.Host=127.0.0.1 -s Server.Kafka.Port=0 \
  >"$dir/node.log" 2>&1 </dev/null &
node_pid=$!

ready=""
for _ in $(seq 1 300); do
  ready=$(grep -m1 ' node\.ready ' "$dir/node.log" || true)
  [ -n "$ready" ] && break
  kill -0 "$node_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$ready" ]; then
  tail -n 20 "$dir/node.log" >&2
  die "the node did not log node.ready (log above)"
fi
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$ready"; }
client=$(field client)
kafka=$(field kafka)
admin=$(field admin)
[ -n "$client" ] && [ -n "$kafka" ] || die "no client= or kafka= in: $ready"

http() {  # METHOD PATH [BODY]: prints the body, fails on a non-2xx status
  curl -sS --fail-with-body --max-time 30 -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "http://$client$2"
}
for t in bench bench-http bench-http1 bench-json latency; do
  http POST /v1/topics "{\"name\":\"$t\",\"partitions\":1}" >/dev/null || die "cannot create topic $t"
done
log_end() {  # TOPIC: log end offset of partition 0
  http GET "/v1/topics/$1/partitions/0/records?offset=0&max_records=1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["log_end_offset"])'
}

# --- values -------------------------------------------------------------------
values="$dir/values.txt"
python3 - "$values" "$records" "$value_bytes" <<'PY'
import os, sys
path, n, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
table = bytes(ord('a') + i % 26 for i in range(256))
per = max(1, (4 << 20) // (b + 1))
with open(path, 'wb') as f:
    left = n
    while left:
        k = min(per, left)
        raw = os.urandom(k * b).translate(table)
        f.write(b''.join(raw[i * b:(i + 1) * b] + b'\n' for i in range(k)))
        left -= k
PY
value_total=$((records * value_bytes))

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", n / s }'; }
mbs() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.1f", n / s / 1e6 }'; }

# --- 1. raw fsync limit -------------------------------------------------------
# The values' bytes (at most 256 MiB), 256 KiB chunks, fdatasync after each.
raw_bytes=$(( value_total < 268435456 ? value_total : 268435456 ))
raw_s=$(python3 - "$dir/raw" "$raw_bytes" <<'PY'
import os, sys, time
path, total = sys.argv[1], int(sys.argv[2])
chunk = os.urandom(256 * 1024)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t0 = time.monotonic()
done = 0
while done < total:
    part = chunk[:min(len(chunk), total - done)]
    view = memoryview(part)
    while view:
        view = view[os.write(fd, view):]
    os.fdatasync(fd)
    done += len(part)
s = time.monotonic() - t0
os.close(fd)
os.unlink(path)
print(f"{s:.6f}")
PY
)
raw_mbs=$(mbs "$raw_bytes" "$raw_s")

# --- 2. kafka produce ---------------------------------------------------------
t0=$(now)
kcat -P -b "$kafka" -t bench -p 0 -X acks=all -X linger.ms=5 -X batch.num.messages=10000 \
  <"$values" 2>"$dir/kcat-produce.err" || { cat "$dir/kcat-produce.err" >&2; die "kcat -P failed"; }
t1=$(now)
kafka_produce_s=$(secs "$t0" "$t1")
end=$(log_end bench)
[ "$end" = "$records" ] || die "topic bench: log end offset $end after kcat -P, expected $records"

# --- 3. http produce ----------------------------------------------------------
http_produce() {  # TOPIC [MOONMQCTL OPTION...]: moonmqctl produce of the values; prints seconds, checks the log end
  local topic=$1 t0 t1 end
  shift
  t0=$(now)
  "$bin_dir/moonmqctl" -u "$client" produce "$topic" -p 0 --batch 500 --acks leader "$@" \
    <"$values" >/dev/null 2>"$dir/$topic-produce.err" ||
    { cat "$dir/$topic-produce.err" >&2; die "moonmqctl produce $topic $* failed"; }
  t1=$(now)
  end=$(log_end "$topic")
  [ "$end" = "$records" ] || die "topic $topic: log end offset $end after moonmqctl produce $*, expected $records"
  secs "$t0" "$t1"
}
http_produce_s=$(http_produce bench-http --in-flight 8)
http1_produce_s=$(http_produce bench-http1 --in-flight 1)
json_produce_s=$(http_produce bench-json --in-flight 8 --form json)

# --- 4. kafka fetch -----------------------------------------------------------
t0=$(now)
counts=$(kcat -C -b "$kafka" -t bench -p 0 -o beginning -e -q -c "$records" -f '%s\n' \
  2>"$dir/kcat-consume.err" | wc -lc) || { cat "$dir/kcat-consume.err" >&2; die "kcat -C failed"; }
t1=$(now)
kafka_fetch_s=$(secs "$t0" "$t1")
read -r got_records got_bytes <<<"$counts"
[ "$got_records" = "$records" ] || die "kcat -C consumed $got_records records, expected $records"
[ "$got_bytes" = $((records * (value_bytes + 1))) ] ||
  die "kcat -C consumed $got_bytes bytes with newlines, expected $((records * (value_bytes + 1)))"

http_fetch() {  # TOPIC FORM: moonmqctl consume of partition 0 into wc -lc; prints seconds, checks the counts
  local t0 t1 counts got_records got_bytes
  t0=$(now)
  counts=$("$bin_dir/moonmqctl" -u "$client" consume "$1" -p 0 --form "$2" 2>"$dir/consume-$2.err" | wc -lc) ||
    { cat "$dir/consume-$2.err" >&2; die "moonmqctl consume --form $2 failed"; }
  t1=$(now)
  read -r got_records got_bytes <<<"$counts"
  [ "$got_records" = "$records" ] || die "moonmqctl consume $1 --form $2 printed $got_records records, expected $records"
  [ "$got_bytes" = $((records * (value_bytes + 1))) ] ||
    die "moonmqctl consume $1 --form $2 printed $got_bytes bytes with newlines, expected $((records * (value_bytes + 1)))"
  secs "$t0" "$t1"
}
http_fetch_s=$(http_fetch bench-http binary)
json_fetch_s=$(http_fetch bench-json json)

# --- 5. kafka spread -----------------------------------------------------------
# Created only now, so that its logs do not open during steps 1-4; every
# log of "wide" open before the run (the create answers before the logs are).
http POST /v1/topics "{\"name\":\"wide\",\"partitions\":$wide}" >/dev/null || die "cannot create topic wide"
opened=0
for _ in $(seq 1 600); do
  m=$(curl -sS --max-time 5 "http://$admin/metrics" || true)
  if grep -q '^moonmq_partitions_opening 0$' <<<"$m"; then opened=1; break; fi
  sleep 0.1
done
[ "$opened" = 1 ] || die "the logs of topic wide did not open within 60 s"
t0=$(now)
kcat -P -b "$kafka" -t wide -X acks=all -X linger.ms=5 -X batch.num.messages=10000 \
  -X sticky.partitioning.linger.ms=0 <"$values" 2>"$dir/kcat-spread.err" ||
  { cat "$dir/kcat-spread.err" >&2; die "kcat -P to wide failed"; }
t1=$(now)
kafka_spread_s=$(secs "$t0" "$t1")
sum=$(python3 - "$client" "$wide" <<'PY'
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
conn = http.client.HTTPConnection(host, int(port), timeout=30)
total = 0
for p in range(int(sys.argv[2])):
    conn.request("GET", f"/v1/topics/wide/partitions/{p}/records?offset=0&max_records=1")
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        sys.exit(f"wide/{p}: HTTP {r.status} {body[:200]!r}")
    total += json.loads(body)["log_end_offset"]
print(total)
PY
) || die "cannot read the log end offsets of topic wide"
[ "$sum" = "$records" ] || die "topic wide: log end offsets sum to $sum after kcat -P, expected $records"

# --- 6. latency -----------------------------------------------------------------
latency_out=""
if [ "$latency_seconds" -gt 0 ]; then
  latency_out=$(/usr/bin/python3 "$repo/bench/kafka/produce_latency.py" "$kafka" latency "$dir" "$rate" \
    "$latency_seconds" "$value_bytes" "$admin") || die "the latency run failed"
fi

# --- 7. redis xadd --------------------------------------------------------------
redis_rows=()
if [ "$redis" = 1 ]; then
  rport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$dir/redis"
  redis-server --port "$rport" --bind 127.0.0.1 --dir "$dir/redis" --appendonly yes --appendfsync always \
    --save '' --daemonize no --logfile "$dir/redis.log" </dev/null &
  redis_pid=$!
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ] && break
    sleep 0.1
  done
  [ "$(redis-cli -p "$rport" config get appendfsync | tail -n 1)" = always ] || die "redis-server did not start with appendfsync always (log: $dir/redis.log)"
  value=$(head -n 1 "$values")
  for pipeline in 500 4000; do
    t0=$(now)
    redis-benchmark -h 127.0.0.1 -p "$rport" -c 1 -n "$records" -P "$pipeline" -q \
      XADD "xadd$pipeline" '*' v "$value" >/dev/null || die "redis-benchmark failed"
    t1=$(now)
    len=$(redis-cli -p "$rport" XLEN "xadd$pipeline")
    [ "$len" = "$records" ] || die "redis stream xadd$pipeline holds $len entries, expected $records"
    redis_rows+=("redis xadd P$pipeline" "$(secs "$t0" "$t1")")
  done
fi

# --- figures ------------------------------------------------------------------
frac() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() {  # NAME SECONDS [raw fraction?]
  local m; m=$(mbs "$value_total" "$2")
  printf '%-16s %10s %12s %9s %9s\n' "$1" "$2" "$(rate "$records" "$2")" "$m" "${3:+$(frac "$m" "$raw_mbs")}"
}
echo "kafka_bench: $records records x $value_bytes B values ($(mbs "$value_total" 1) MB), 1 partition, node $bin_dir/moonmq-node"
printf '%-16s %10s %12s %9s %9s\n' "" "seconds" "records/s" "MB/s" "of raw"
row "kafka produce" "$kafka_produce_s" raw
row "http produce" "$http_produce_s" raw
row "http 1 in flight" "$http1_produce_s" raw
row "http json" "$json_produce_s" raw
row "kafka fetch" "$kafka_fetch_s"
row "http fetch" "$http_fetch_s"
row "http fetch json" "$json_fetch_s"
row "kafka spread" "$kafka_spread_s" raw
for ((i = 0; i < ${#redis_rows[@]}; i += 2)); do
  row "${redis_rows[i]}" "${redis_rows[i + 1]}" raw
done
printf '%-16s %10.3f %12s %9s\n' "raw fsync" "$raw_s" "-" "$raw_mbs"
echo "(MB = 10^6 bytes of values; raw fsync: $raw_bytes bytes in 256 KiB chunks, fdatasync after each; verified: both log end offsets and kcat -C = $records records)"
echo "http produce, 8 in flight / 1 in flight, same run: $(frac "$http1_produce_s" "$http_produce_s") (records/s ratio)"
echo "http (binary) / http json, same run: produce $(frac "$json_produce_s" "$http_produce_s"), fetch $(frac "$json_fetch_s" "$http_fetch_s"); http fetch / kafka fetch: binary $(frac "$kafka_fetch_s" "$http_fetch_s"), json $(frac "$kafka_fetch_s" "$json_fetch_s") (records/s ratios; verified: moonmqctl consume printed $records records of each)"
echo "kafka spread over $wide partitions / kafka produce to 1: $(frac "$kafka_produce_s" "$kafka_spread_s") (records/s ratio, same run; verified: log end offsets of wide sum to $records)"
if [ "${#redis_rows[@]}" -gt 0 ]; then
  best=$(awk -v a="${redis_rows[1]}" -v b="${redis_rows[3]}" 'BEGIN { print (a < b ? a : b) }')
  echo "http produce / redis xadd (the faster pipeline), same run: $(frac "$best" "$http_produce_s") (records/s ratio; redis-server appendfsync always, one connection; verified: XLEN = $records)"
fi
[ -z "$latency_out" ] || printf '%s\n' "$latency_out"
ok=1
