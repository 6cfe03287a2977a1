#!/usr/bin/env bash
# Installs the Debian packages moonmq needs to build, test and run its demo.
# Idempotent: packages already present are not fetched again. Needs root (or
# sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev libboost-dev libboost-filesystem-dev libboost-system-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev catch2 libssl-dev openssl libcli11-dev
  libsimdjson-dev               # the produce route's JSON parser (dataplane/records_json.cpp)
  libbenchmark-dev prometheus curl python3
  kcat python3-confluent-kafka  # the Kafka listener's tests (librdkafka 2.0.2 through kcat and Python)
  librdkafka-dev                # bench/kafka/kafka_txn_bench (librdkafka's C API)
  chromium                      # the web console's test (headless, through puppeteer-core)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm test clients, installed once under $MOONMQ_NPM_DIR (~/.cache/moonmq-npm);
# the tests set NODE_PATH to its node_modules: kafkajs 2.2.4 for the Kafka
# listener's tests (tests/kafka_node), puppeteer-core 24.43.1 (Node >= 18,
# drives Debian's chromium; it downloads no browser) for the web console's
# (tests/console).
npm_clients=(kafkajs@2.2.4 puppeteer-core@24.43.1)
install_npm_clients() {
  local dir="${MOONMQ_NPM_DIR:-$HOME/.cache/moonmq-npm}" wanted=() c
  for c in "${npm_clients[@]}"; do
    grep -qs "\"version\": \"${c##*@}\"" "$dir/node_modules/${c%@*}/package.json" || wanted+=("$c")
  done
  if [ ${#wanted[@]} -eq 0 ]; then
    return
  fi
  if ! command -v npm >/dev/null; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"moonmq-test-clients","private":true}' > "$dir/package.json"
  echo "install-deps: installing ${wanted[*]} into $dir"
  (cd "$dir" && npm install --no-audit --no-fund --silent "${wanted[@]}")
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_npm_clients
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_npm_clients
