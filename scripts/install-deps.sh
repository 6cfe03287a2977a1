#!/usr/bin/env bash
# Installs the Debian packages moonmq needs to build, test and run its demo.
# Idempotent: packages already present are not fetched again. Needs root (or
# sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev libboost-dev libboost-filesystem-dev libboost-system-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev catch2 libssl-dev openssl libcli11-dev
  libbenchmark-dev prometheus curl python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
