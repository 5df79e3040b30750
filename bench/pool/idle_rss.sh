#!/usr/bin/env bash
# Idle memory of a personal pool: starts `glean up --stations 4` with the
# given binary, waits IDLE seconds (default 12) and prints each daemon's RSS
# and PSS and their sums (bench/README.md, "Idle memory").
#
#   bench/pool/idle_rss.sh target/release/glean
#   IDLE=25 bench/pool/idle_rss.sh target/release/glean
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(readlink -f "${1:?usage: idle_rss.sh GLEAN_BINARY}")
W=$(mktemp -d /tmp/glean-idle.XXXXXX)
BASE=$(python3 "$ROOT/bench/pool/free_base.py" 6)
GLEAN_HOME=$W/pool "$BIN" up --stations 4 --port "$BASE" >"$W/up.log" 2>&1 &
UP=$!
trap 'kill $UP 2>/dev/null || true; wait $UP 2>/dev/null || true; rm -rf "$W"' EXIT
for _ in $(seq 1 300); do [ -s "$W/pool/pool.toml" ] && break; sleep 0.1; done
sleep "${IDLE:-12}"
rss=0; pss=0
for d in $(pgrep -P "$UP"); do
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$d/status")
    p=$(awk '/^Pss:/ {print $2}' "/proc/$d/smaps_rollup")
    rss=$((rss + r)); pss=$((pss + p))
    echo "$d $(tr '\0' ' ' <"/proc/$d/cmdline" | cut -d' ' -f2): RSS $r kB, PSS $p kB"
done
awk -v r="$rss" -v p="$pss" 'BEGIN { printf "RSS sum %.1f MiB, PSS sum %.1f MiB\n", r / 1024, p / 1024 }'
