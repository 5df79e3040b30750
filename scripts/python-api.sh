#!/usr/bin/env bash
# Builds the Python API (python/, docs/python.md) into the virtual
# environment its tests use: $GLEANER_PYTHON_VENV, or pyvenv/ in the
# workspace's target directory. The environment is made with Debian's
# python3 (its files are readable by the Unix users the tests create;
# the python3 on PATH may live under /root), gets maturin and pytest and
# the PyPI tools the client tests drive (scripts/requirements-python-api.txt),
# then `pip install ./python`, whose extension cargo builds in the
# workspace's own target directory (dev profile), reusing what the tests
# compiled. HTCondor's own wheel stays in the machine's python3, as the
# oracle; nothing here touches it.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="${GLEANER_PYTHON_VENV:-$target/pyvenv}"
base=/usr/bin/python3
if [ ! -x "$base" ] || ! "$base" -c "import venv, ensurepip" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
    fi
fi
if [ ! -x "$venv/bin/python" ]; then
    "$base" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
"${pip[@]}" install -r scripts/requirements-python-api.txt
# The client tools name HTCondor's wheel as a dependency: installed
# without their dependencies (listed in the requirements file instead),
# so that this environment's htcondor2 stays Gleaner's.
"${pip[@]}" install --no-deps -r scripts/requirements-python-clients.txt
started=$(date +%s)
PATH="$venv/bin:$PATH" CARGO_TARGET_DIR="$target" \
    "${pip[@]}" install --no-build-isolation --no-deps --force-reinstall ./python
echo "python API: built and installed into $venv in $(($(date +%s) - started)) s"
