#!/bin/sh
# Owner-protection benchmark (issue 5): owner slowdown with guests under no
# isolation / nice 19 / SCHED_IDLE + idle cgroup, guest harvest of idle CPU,
# owner wake-up latency, activity event -> guest frozen through the station
# daemon, and the daemon's own cost watching an idle machine.
#
# Usage: bench/owner/run.sh [io] [--quick]     (run as root for the cgroup parts)
# Writes bench/owner/results.md and prints it; with `io`, only section 6
# (the owner's fsync latency while a guest writes), into results-io.md.
# PROFILE=dev uses the dev build (faster to build; the measured workloads are
# separate processes either way). Default: release.
set -eu
cd "$(dirname "$0")/../.."
profile="${PROFILE:-release}"
cargo build -q --profile "$profile" -p gleaner-station --example owner_bench
dir="${CARGO_TARGET_DIR:-target}/$([ "$profile" = dev ] && echo debug || echo "$profile")/examples"
mode=all
out=bench/owner/results.md
if [ "${1:-}" = io ]; then
    mode=io
    out=bench/owner/results-io.md
    shift
fi
"$dir/owner_bench" "$mode" "$@" | tee "$out"
