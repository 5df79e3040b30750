#!/usr/bin/env bash
# Where a trivial job's cost goes (issue 15): a personal pool of 4 stations
# (`glean up` with its defaults), one cluster of JOBS `/bin/true` jobs, the
# daemons' CPU for them and the throughput from the stations' timestamps;
# with PERF=1 also a system-wide `perf record` of the burst (12 s), whose
# report by symbol shows what the daemons do. Needs root (jobs run as
# BENCH_USER, guests as slot accounts), jq, and perf for PERF=1. See
# bench/README.md.
#
#   bench/pool/profile.sh                # 1000 jobs
#   PERF=1 bench/pool/profile.sh         # and perf.data in the work dir
#   perf report -i WORK/perf.data --children --comm tokio-rt-worker --sort sym -g none
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=${JOBS:-1000}
BENCH_USER=${BENCH_USER:-glean-bench}
if [ -z "${GLEAN_BIN:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p gleaner-cli)
    GLEAN_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/glean"
fi
GLEAN_BIN=$(readlink -f "$GLEAN_BIN")
[ "$(id -u)" = 0 ] || { echo "profile: needs root" >&2; exit 1; }
id "$BENCH_USER" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$BENCH_USER"

WORK=$(mktemp -d /tmp/glean-profile.XXXXXX)
chmod 755 "$WORK"
PORT=$(python3 "$ROOT/bench/pool/free_base.py" 10)
GLEAN_HOME="$WORK/pool" "$GLEAN_BIN" up --stations 4 --port "$PORT" >"$WORK/up.log" 2>&1 &
UP=$!
# The work dir goes at the end unless it holds the profile (PERF) or KEEP=1.
trap 'kill -INT $UP 2>/dev/null || true; sleep 3; [ -n "${PERF:-}${KEEP:-}" ] || rm -rf "$WORK"' EXIT
for _ in $(seq 1 600); do [ -s "$WORK/pool/pool.toml" ] && break; sleep 0.1; done
[ -s "$WORK/pool/pool.toml" ] || { echo "profile: glean up did not start:" >&2; cat "$WORK/up.log" >&2; exit 1; }
chmod 755 "$WORK/pool"
chmod 644 "$WORK/pool/pool.toml"
mkdir -p "$WORK/jobs"
chown "$BENCH_USER" "$WORK/jobs"
g() { (cd "$WORK/jobs" && runuser -u "$BENCH_USER" -- env GLEAN_HOME="$WORK/pool" "$GLEAN_BIN" "$@"); }
printf 'executable = /bin/true\nqueue %s\n' "$JOBS" >"$WORK/jobs/many.sub"
chown "$BENCH_USER" "$WORK/jobs/many.sub"
sleep 3 # every station advertised
DAEMONS=$(pgrep -P "$UP" | tr '\n' ' ')
ticks() { for p in $DAEMONS; do awk '{print $14 + $15}' "/proc/$p/stat"; done | paste -sd+ | bc; }

a=$(ticks)
if [ -n "${PERF:-}" ]; then
    perf record -o "$WORK/perf.data" -a -e cpu-clock -F 499 -g -- sleep 12 >/dev/null 2>&1 &
    PP=$!
fi
g submit many.sub >/dev/null
while :; do
    left=$(g q --page-size 1 | sed -n 's/^Total: \([0-9]*\) jobs.*/\1/p')
    [ "${left:-1}" = 0 ] && break
    sleep 0.5
done
b=$(ticks)
CPU=$(echo "($b - $a) / $(getconf CLK_TCK)" | bc -l)
g history --json >"$WORK/history.json"
SPAN=$(jq '((map(.finished_at) | max) - (map(.submitted_at) | min)) / 1e6' "$WORK/history.json")
printf '%s jobs: %.2f s from first submit to last completion, %.1f jobs/s; daemons'"'"' CPU %.2f s (%.2f ms a job)\n' \
    "$JOBS" "$SPAN" "$(echo "$JOBS / $SPAN" | bc -l)" "$CPU" "$(echo "1000 * $CPU / $JOBS" | bc -l)"
if [ -n "${PERF:-}" ]; then
    wait "$PP" || true
    echo "perf data: $WORK/perf.data"
fi
[ -z "${PERF:-}${KEEP:-}" ] || echo "work dir: $WORK"
