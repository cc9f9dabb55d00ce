#!/usr/bin/env bash
# Sets up everything hipforge needs on a fresh machine: system packages (when root), then .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang-22 + libamdhip64-dev: the gfx950 compile gate; chromium: the browser tests; g++: the cpu backend.
APT_PACKAGES=(clang-22 libamdhip64-dev chromium chromium-driver g++ make)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing system packages: ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
  fi
else
  echo "bootstrap: not root, skipping system packages (${APT_PACKAGES[*]}); the compile gate and browser tests need them"
fi

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: the CPU 2.13.0 build; a bare range would pull a multi-GB CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
touch .venv/.hipforge-installed
echo "bootstrap: environment ready (.venv)"
