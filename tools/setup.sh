#!/usr/bin/env bash
# Installs the Debian packages nanoconv needs, when run as root; otherwise says
# what to install. Usage: tools/setup.sh run|test
#   run:  what building and running need
#   test: that, plus the test oracles (PyTorch, scikit-image)
set -euo pipefail
profile=${1:-run}
pkgs=(cmake make gcc pkg-config zlib1g-dev libcjson-dev dataset-fashion-mnist)
if [ "$profile" = test ]; then
  pkgs+=(python3 python3-numpy python3-torch python3-skimage)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
