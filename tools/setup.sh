#!/usr/bin/env bash
# Idempotent set-up for vkmorph on Debian 12: apt packages, .venv, editable install with dev extras.
# Fast when everything is already present (dpkg query + a stamp compared with pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS="libvulkan1 mesa-vulkan-drivers vulkan-validationlayers glslang-tools libassimp5 xvfb xauth xdotool"
missing=""
for p in $APT_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "[setup] installing apt packages:$missing" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >&2
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv" >&2
  "$PY" -m venv .venv
fi
if [ ! -f .venv/.stamp ] || [ pyproject.toml -nt .venv/.stamp ]; then
  echo "[setup] installing vkmorph (editable) with dev extras" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' >&2
  touch .venv/.stamp
fi
