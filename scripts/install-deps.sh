#!/usr/bin/env bash
# Installs what nnvmc needs and is missing: Debian packages and the PyPI `torch` wheel
# (libtorch). Heavy dependencies go to system locations outside the checkout, so a fresh
# clone on a machine that already has them downloads nothing. Idempotent.
set -euo pipefail

DEB_PACKAGES=(
  build-essential cmake git python3 python3-pip
  libeigen3-dev libyaml-cpp-dev libhdf5-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libint2-dev libboost-dev
  libopenmpi-dev openmpi-bin        # multi-process runs (mpirun -np K nnvmc ...) and their tests
  python3-matplotlib python3-h5py   # plots of `nnvmc compare` and `nnvmc profile`
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[deps] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

PY=${PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "[deps] installing libtorch (PyPI torch wheel) for $PY"
  "$PY" -m pip install --quiet torch || "$PY" -m pip install --quiet --break-system-packages torch
fi
# Python helpers for plots and for exporting basis sets (small; optional for the build).
for mod in h5py:h5py matplotlib:matplotlib yaml:pyyaml numpy:numpy; do
  "$PY" -c "import ${mod%%:*}" >/dev/null 2>&1 || "$PY" -m pip install --quiet "${mod##*:}" || true
done
echo "[deps] ok: torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
