#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each with cargo-fuzz
# and libFuzzer, and prints how many inputs each one executed.
#
#   scripts/fuzz.sh SECONDS [TARGET...]     bounded run (CI: 20)
#   scripts/fuzz.sh --check-seeds           every committed seed still reads
#   scripts/fuzz.sh --list                  the targets
#
# Builds on stable Rust with `--sanitizer none` (Rust code needs no ASan;
# that is what keeps it off nightly) and debug assertions, so arithmetic
# overflow panics too. FUZZ_TOOLCHAIN=nightly FUZZ_SANITIZER=address gives
# ASan builds instead. Set CARGO_TARGET_DIR to keep the (large) build apart.
#
# Each target starts from its committed seeds (fuzz/corpus/TARGET, never
# written to) plus a working corpus kept between runs in fuzz/work/TARGET.
# A crash, a panic, a timeout (FUZZ_TIMEOUT s per input) or an input using
# more than FUZZ_RSS_MB MiB fails the run; the input is saved under
# fuzz/artifacts/TARGET/ and the script exits 1 after the other targets.
# See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

# Empty: the default toolchain (stable works; see above).
toolchain="${FUZZ_TOOLCHAIN:-}"
sanitizer="${FUZZ_SANITIZER:-none}"
timeout_s="${FUZZ_TIMEOUT:-30}"
rss_mb="${FUZZ_RSS_MB:-2048}"
build=(-s "$sanitizer" --debug-assertions)
targets_all=(submit_parse classad_parse_eval dag_parse station_config coordinator_config wire_messages)

plus=()
[ -z "$toolchain" ] || plus=("+$toolchain")
fuzz() { cargo "${plus[@]}" fuzz "$@"; }

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
case "$1" in
--list) printf '%s\n' "${targets_all[@]}"; exit 0 ;;
--check-seeds) mode=check; shift; secs=0 ;;
-h|--help) usage ;;
*) mode=run; secs="$1"; shift
   [[ "$secs" =~ ^[0-9]+$ ]] || usage ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${targets_all[@]}")

if ! fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz (toolchain ${toolchain:-default}) not found: cargo install cargo-fuzz" >&2
    exit 3
fi

echo "== fuzz build (toolchain ${toolchain:-default}, sanitizer $sanitizer)"
start=$(date +%s)
(cd fuzz && fuzz build "${build[@]}")
echo "build: $(( $(date +%s) - start )) s"

logs=fuzz/work/logs
mkdir -p "$logs"
failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
    # Paths relative to fuzz/, where cargo-fuzz runs.
    # cargo-fuzz itself points -artifact_prefix at fuzz/artifacts/TARGET/.
    args=(-timeout="$timeout_s" -rss_limit_mb="$rss_mb" -print_final_stats=1)
    [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="dict/$t.dict")
    log="$logs/$t.log"
    set +e
    if [ "$mode" = check ]; then
        # Every seed once; one that does not read is a failure.
        (cd fuzz && GLEANER_FUZZ_SEED_CHECK=1 fuzz run "${build[@]}" "$t" "corpus/$t" -- \
            -runs=0 "${args[@]}") >"$log" 2>&1
    else
        echo "== $t: $secs s"
        # New inputs go to the first directory: the work corpus, not the seeds.
        (cd fuzz && fuzz run "${build[@]}" "$t" "work/$t" "corpus/$t" -- \
            -max_total_time="$secs" "${args[@]}") >"$log" 2>&1
    fi
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
    secs_run=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1 | grep -o 'in [0-9]*' | grep -o '[0-9]*' || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    corpus=$(find "fuzz/work/$t" -type f | wc -l)
    line=$(printf '%-20s execs %10s  secs %5s  cov %6s  work corpus %5s' \
        "$t" "${execs:-?}" "${secs_run:-?}" "${cov:-?}" "$corpus")
    if [ $rc -ne 0 ]; then
        artifact=$(grep -o 'Test unit written to [^ ]*' "$log" | tail -1 | sed 's/Test unit written to //' || true)
        line="$line  FAILED (exit $rc)${artifact:+: $artifact}"
        failed+=("$t")
        echo "--- $t: last lines of $log"
        tail -n 40 "$log" | grep -v '^#[0-9]' || true
    fi
    echo "$line"
    summary+=("$line")
done

echo "== fuzz summary ($mode${secs:+, $secs s per target})"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failed: ${failed[*]} (inputs under fuzz/artifacts/; reproduce with" \
         "cd fuzz && cargo ${plus[*]} fuzz run ${build[*]} TARGET ARTIFACT)" >&2
    exit 1
fi
