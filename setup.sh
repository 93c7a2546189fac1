#!/usr/bin/env bash
# Installs everything mcu-planner and its tests need; safe to run again.
#   system: gcc, g++, make, cmake, gcc-arm-none-eabi, libnewlib-arm-none-eabi, qemu-system-arm, and
#   libabsl-dev (bench/planners.py builds minimalloc with it), chromium (a headless browser opens
#   the --report HTML in the tests) (Debian/Ubuntu apt)
#   Python: a virtual environment in .venv with mcu-planner and its test extras
set -euo pipefail
cd "$(dirname "$0")"

apt_packages=(gcc g++ make cmake gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm libabsl-dev chromium)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if command -v apt-get >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: please install ${missing[*]} with your package manager (Cortex-M builds and QEMU tests need them)" >&2
  fi
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
log=.venv/setup.log
{
  .venv/bin/python -m pip install --upgrade pip setuptools wheel
  .venv/bin/python -m pip install ".[test]"
  # The tests import the package from this checkout: give it the exact
  # planner's C extension too (the installed copy has its own).
  .venv/bin/python setup.py build_ext --inplace
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; echo "setup: failed; the full log is $log" >&2; exit 1; }
echo "setup: done; the command is .venv/bin/mcu-plan"
