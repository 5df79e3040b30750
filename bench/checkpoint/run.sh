#!/bin/sh
# Checkpoint benchmark: checkpoint/transfer/restore times for 10 MB, 100 MB
# and 1 GB of state beside raw disk and loopback copies, then Mutka's
# leverage extrapolated to a 1-hour job. Extra arguments go to the binary:
#   --sizes 10,100,1000   --leverage-secs 20,60   --no-leverage
set -eu
cd "$(dirname "$0")/../.."
cargo build --release -p gleaner-station --example ckpt_bench
exec "${CARGO_TARGET_DIR:-target}/release/examples/ckpt_bench" "$@"
