#!/bin/sh
# Checkpoint benchmark: a checkpoint's round trip (pack and send home,
# fetch and restore) for 1 GB and 4 GB of incompressible and compressible
# state beside raw disk and loopback copies, then Mutka's leverage
# extrapolated to a 1-hour job. Extra arguments go to the binary:
#   --sizes 1000,4000  --kinds random,text  --no-criu  --levels 1,3
#   --leverage-secs 20,60  --no-leverage
set -eu
cd "$(dirname "$0")/../.."
cargo build --release -p gleaner-station --example ckpt_bench
exec "${CARGO_TARGET_DIR:-target}/release/examples/ckpt_bench" "$@"
