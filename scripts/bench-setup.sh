#!/usr/bin/env bash
# Set-up for the peer benchmarks: Debian's PyTorch and torchvision (python3-torch,
# python3-torchvision; run as root to install). Idempotent.
set -euo pipefail
missing=()
for p in python3-torch python3-torchvision; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "bench-setup: missing packages (run as root to install): ${missing[*]}" >&2
    exit 1
  fi
fi
