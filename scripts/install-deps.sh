#!/usr/bin/env bash
# Installs npusim's build and test dependencies from Debian 12 packages (needs root or sudo).
# Idempotent: packages already present are left alone. --ci adds what CI's second stage needs
# (clang++, its sanitizer runtimes and OpenMP: scripts/test.sh --sanitize builds with Clang).
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config
  libeigen3-dev libxsimd-dev xtl-dev xtensor-dev nlohmann-json3-dev libmsgpack-cxx-dev libcli11-dev libpng-dev libjpeg-dev
  opencl-c-headers opencl-clhpp-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  openmpi-bin libopenmpi-dev
)
[ "${1:-}" = "--ci" ] && pkgs+=(clang libclang-rt-14-dev libomp-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
