#!/usr/bin/env bash
# Pool benchmark (issues #4, #15): a personal pool of 4 one-CPU stations
# on this machine, started by `glean up` with its own defaults (no tuning
# flags), then the same jobs on Debian's slurm-wlm (one node, 4 CPUs) and on
# HyperQueue (PyPI `hyperqueue`, 4 workers of one core), one table with
# ratios; then a 100 000-job cluster on Gleaner (submit, `glean q`, the
# station's memory) and the coordinator's criterion round. See
# bench/README.md.
#
#   bench/pool/run.sh                 # everything
#   JOBS=200 SKIP_SLURM=1 bench/pool/run.sh
#
# Environment:
#   JOBS         trivial jobs in the throughput run (default 1000)
#   LAT_JOBS     single jobs submitted one after another for the
#                submit→running latency on an idle pool (default 30)
#   INTERVAL     passes `--interval` to `glean up` (default: glean up's own)
#   BENCH_USER   the Unix account that submits when run as root (default
#                glean-bench, created if missing; root never submits)
#   GLEAN_BIN    a glean binary to use instead of building one
#   BIG_JOBS     procs of the big cluster (default 100000)
#   SKIP_GLEAN=1 / SKIP_SLURM=1 / SKIP_HQ=1 / SKIP_BIG=1 / SKIP_CRITERION=1
#                leave a part out
#   KEEP=1       keep the work directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=${JOBS:-1000}
LAT_JOBS=${LAT_JOBS:-30}
INTERVAL=${INTERVAL:-}
BENCH_USER=${BENCH_USER:-glean-bench}
STATIONS=4
IDLE_SECS=${IDLE_SECS:-10}
BIG_JOBS=${BIG_JOBS:-100000}
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

say() { printf '%s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null || { say "bench: needs $1"; exit 1; }; }
need jq
need curl

if [ -z "${GLEAN_BIN:-}" ]; then
    say "== building the release glean binary"
    (cd "$ROOT" && cargo build --release -q -p gleaner-cli)
    GLEAN_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/glean"
fi
GLEAN_BIN=$(readlink -f "$GLEAN_BIN")

WORK=$(mktemp -d /tmp/glean-bench.XXXXXX)
# Guests run as an unprivileged user and must reach their sandboxes.
chmod 755 "$WORK"
PIDS=()
cleanup() {
    # `glean up` stops its daemons on SIGINT, as on Ctrl-C.
    if [ -n "${UP:-}" ]; then kill -INT "$UP" 2>/dev/null || true; sleep 3; fi
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    if [ -n "${SLURM_STARTED:-}" ]; then slurm_stop || true; sleep 2; fi
    if [ -z "${KEEP:-}" ]; then rm -rf "$WORK" 2>/dev/null || true; else say "work dir kept: $WORK"; fi
}
trap cleanup EXIT

wait_port() {
    local port=$1 i
    for i in $(seq 1 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    say "bench: nothing listens on $port"; return 1
}

# --- /proc sampling ------------------------------------------------------
CLK_TCK=$(getconf CLK_TCK)
# utime+stime of a pid, in clock ticks (fields 14 and 15 of /proc/PID/stat;
# the command name in field 2 may hold spaces, so cut after its ')').
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
now_s() { date +%s.%N; }
# cpu_window PIDS... : sets TICKS_<pid> snapshots (space-separated list).
snap_ticks() { local p out=""; for p in "$@"; do out+="$(cpu_ticks "$p") "; done; echo "$out"; }
# cpu_pct T0LIST T1LIST SECONDS: total CPU% of the daemons over the window.
cpu_pct() {
    awk -v a="$1" -v b="$2" -v s="$3" -v hz="$CLK_TCK" 'BEGIN {
        n = split(a, x, " "); split(b, y, " "); t = 0;
        for (i = 1; i <= n; i++) t += y[i] - x[i];
        printf "%.1f", 100 * t / hz / s }'
}
rss_total_mb() { local p t=0; for p in "$@"; do t=$((t + $(rss_kb "$p"))); done; awk -v t="$t" 'BEGIN{printf "%.1f", t/1024}'; }
# Proportional set size: the daemons share one binary's pages, which RSS
# counts once per daemon and PSS splits between them.
pss_kb() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup"; }
pss_total_mb() { local p t=0; for p in "$@"; do t=$((t + $(pss_kb "$p"))); done; awk -v t="$t" 'BEGIN{printf "%.1f", t/1024}'; }

# Percentiles of a list of numbers on stdin: prints "p50 p99 max".
pctl() { sort -g | awk '{v[NR]=$1} END { if (NR == 0) { print "- - -"; exit }
    i50 = int(0.50 * (NR - 1)) + 1; i99 = int(0.99 * (NR - 1)) + 1;
    printf "%.3f %.3f %.3f\n", v[i50], v[i99], v[NR] }'; }

# --- the Gleaner pool ----------------------------------------------------
LAT50="-"; LAT99="-"; TP_SPAN="-"; WALL="-"; TP="-"; Q50="-"; Q99="-"; FAILED="-"
IDLE_CPU="-"; LOAD_CPU="-"; IDLE_RSS="-"; IDLE_PSS="-"; IDLE_RSS_C="-"; PEAK="-"; PEAK_C="-"
if [ -z "${SKIP_GLEAN:-}" ]; then
say "== starting a personal pool of $STATIONS stations in $WORK (glean up)"
# `glean up` makes the keys and tokens and starts the coordinator and the
# stations as its children, with its own defaults.
BASE_PORT=$(python3 "$ROOT/bench/pool/free_base.py" $((STATIONS + 2)))
GLEAN_HOME="$WORK/pool" "$GLEAN_BIN" up --stations "$STATIONS" --port "$BASE_PORT" \
    ${INTERVAL:+--interval "$INTERVAL"} >"$WORK/up.log" 2>&1 &
UP=$!; PIDS+=("$UP")
for _ in $(seq 1 600); do [ -s "$WORK/pool/pool.toml" ] && break; sleep 0.1; done
[ -s "$WORK/pool/pool.toml" ] || { say "bench: glean up did not start (see $WORK/up.log)"; exit 1; }
DAEMONS=($(pgrep -P "$UP"))
PIDS+=("${DAEMONS[@]}")
CPID=$(pgrep -P "$UP" -f ' coordinator ' | head -n 1)
export GLEAN_HOME="$WORK/pool"
# Root never submits: jobs run as their owner. Run as root, `glean` runs as
# BENCH_USER on station0's user socket (no token needed there).
if [ "$(id -u)" = 0 ]; then
    id "$BENCH_USER" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$BENCH_USER"
    chmod 755 "$WORK/pool"
    chmod 644 "$WORK/pool/pool.toml"
    glean() { (cd "$WORK/jobs" && runuser -u "$BENCH_USER" -- env GLEAN_HOME="$GLEAN_HOME" "$GLEAN_BIN" "$@"); }
    mkdir -p "$WORK/jobs"; chown "$BENCH_USER" "$WORK/jobs"
else
    glean() { (cd "$WORK/jobs" && "$GLEAN_BIN" "$@"); }
    mkdir -p "$WORK/jobs"
fi
cd "$WORK/jobs"
sleep 2 # every station advertised

say "== idle daemons for ${IDLE_SECS}s"
t0=$(now_s); a=$(snap_ticks "${DAEMONS[@]}")
sleep "$IDLE_SECS"
b=$(snap_ticks "${DAEMONS[@]}"); t1=$(now_s)
IDLE_CPU=$(cpu_pct "$a" "$b" "$(echo "$t1 - $t0" | bc)")
IDLE_RSS=$(rss_total_mb "${DAEMONS[@]}")
IDLE_PSS=$(pss_total_mb "${DAEMONS[@]}")
IDLE_RSS_C=$(rss_total_mb "$CPID")

history_json() { glean history --json; }
# A submit file in the jobs directory, owned by whoever submits.
glean_write() { cat >"$WORK/jobs/$1"; [ "$(id -u)" = 0 ] && chown "$BENCH_USER" "$WORK/jobs/$1"; return 0; }
done_count() { history_json | jq --arg c "$1" '[.[] | select(.id | startswith($c + "."))] | length'; }
cluster_of() { sed -n 's/.*submitted to cluster \([0-9]*\).*/\1/p'; }

say "== submit→running latency: $LAT_JOBS single jobs on an idle pool"
printf 'executable = /bin/true\nqueue\n' | glean_write one.sub
LAT_CLUSTERS=()
for i in $(seq 1 "$LAT_JOBS"); do
    c=$(glean submit one.sub | cluster_of)
    LAT_CLUSTERS+=("$c")
    until [ "$(done_count "$c")" = 1 ]; do sleep 0.05; done
done
LAT=$(history_json | jq -r --argjson cs "$(printf '%s\n' "${LAT_CLUSTERS[@]}" | jq -s 'map(tostring)')" \
    '.[] | select((.id | split(".")[0]) as $c | $cs | index($c)) | (.started_at - .submitted_at) / 1e6' | pctl)
read -r LAT50 LAT99 LATMAX <<<"$LAT"

say "== throughput: $JOBS trivial jobs in one submission"
printf 'executable = /bin/true\nqueue %s\n' "$JOBS" | glean_write many.sub
a=$(snap_ticks "${DAEMONS[@]}"); t0=$(now_s)
C=$(glean submit many.sub | cluster_of)
PEAK=0; PEAK_C=0
while :; do
    # The queue's summary (indexed counts) rather than the whole history:
    # the harness's own polling takes little CPU from the jobs. The
    # submitter has no other job in the queue by now.
    left=$(glean q --page-size 1 | sed -n 's/^Total: \([0-9]*\) jobs.*/\1/p')
    r=$(rss_total_mb "${DAEMONS[@]}"); rc=$(rss_total_mb "$CPID")
    PEAK=$(awk -v a="$PEAK" -v b="$r" 'BEGIN{print (b > a) ? b : a}')
    PEAK_C=$(awk -v a="$PEAK_C" -v b="$rc" 'BEGIN{print (b > a) ? b : a}')
    [ "${left:-1}" = 0 ] && break
    sleep 1
done
t1=$(now_s); b=$(snap_ticks "${DAEMONS[@]}")
WALL=$(echo "$t1 - $t0" | bc)
LOAD_CPU=$(cpu_pct "$a" "$b" "$WALL")
# From the stations' own timestamps: first submit to last completion.
history_json >"$WORK/history.json"
read -r TP_SPAN Q50 Q99 <<<"$(jq -r --arg c "$C" '
    [.[] | select(.id | startswith($c + "."))] as $j
    | ((($j | map(.finished_at) | max) - ($j | map(.submitted_at) | min)) / 1e6) as $span
    | ($j | map((.started_at - .submitted_at) / 1e6) | sort) as $w
    | "\($span) \($w[(0.5 * ($w | length - 1)) | floor]) \($w[(0.99 * ($w | length - 1)) | floor])"' "$WORK/history.json")"
TP=$(awk -v n="$JOBS" -v s="$TP_SPAN" 'BEGIN{printf "%.1f", n / s}')
FAILED=$(history_json | jq --arg c "$C" '[.[] | select((.id | startswith($c + ".")) and .state.state != "completed")] | length')

# --- a big cluster: submit, glean q, the station's memory ---------------
if [ -z "${SKIP_BIG:-}" ]; then
    say "== a $BIG_JOBS-job cluster at station0 (owners at their desks: nothing runs)"
    for o in "$WORK"/pool/stations/*/owner; do echo active >"$o"; done
    sleep 2
    S0=$(pgrep -P "$UP" -f 'stations/station0/' | head -n 1)
    BIG_RSS0=$(rss_total_mb "$S0")
    printf 'executable = /bin/true\nqueue %s\n' "$BIG_JOBS" | glean_write big.sub
    # Sample station0's RSS while the cluster goes in and is listed.
    ( peak=0; while kill -0 "$S0" 2>/dev/null && [ ! -e "$WORK/big.done" ]; do
        r=$(rss_kb "$S0"); [ "$r" -gt "$peak" ] && peak=$r; echo "$peak" >"$WORK/big.peak"; sleep 0.05
      done ) &
    SAMPLER=$!
    t0=$(now_s); BC=$(glean submit big.sub | cluster_of); t1=$(now_s)
    BIG_SUBMIT=$(echo "$t1 - $t0" | bc)
    t0=$(now_s); glean q >"$WORK/big.q" 2>&1; t1=$(now_s)
    BIG_Q=$(echo "$t1 - $t0" | bc)
    t0=$(now_s); glean q --page 500 >/dev/null 2>&1; t1=$(now_s)
    BIG_Q500=$(echo "$t1 - $t0" | bc)
    touch "$WORK/big.done"; wait "$SAMPLER" 2>/dev/null || true
    BIG_PEAK=$(awk '{printf "%.1f", $1/1024}' "$WORK/big.peak")
    BIG_QLINE=$(grep -m1 '^Total' "$WORK/big.q" || true)
    t0=$(now_s); glean rm "$BC" >/dev/null 2>&1 || true; t1=$(now_s)
    BIG_RM=$(echo "$t1 - $t0" | bc)
    BIG_RSS1=$(rss_total_mb "$S0")
    for o in "$WORK"/pool/stations/*/owner; do echo idle >"$o"; done
fi

cd "$WORK"
fi

# --- criterion: coordinator round with 10 000 stations --------------------
ROUND_TICK="-"; ROUND_ALL="-"
if [ -z "${SKIP_CRITERION:-}" ]; then
    say "== coordinator round with 10 000 stations (criterion)"
    (cd "$ROOT" && cargo bench -q -p gleaner-coordinator --bench round -- --noplot) \
        >"$WORK/criterion.txt" 2>&1 || say "bench: criterion failed (see $WORK/criterion.txt)"
    ROUND_TICK=$(awk '/coordinator_10000_stations\/tick/ {f=1} f && /time:/ {gsub(/.*\[/,""); print $3, $4; exit}' "$WORK/criterion.txt")
    ROUND_ALL=$(awk '/round_ads_and_tick/ {f=1} f && /time:/ {gsub(/.*\[/,""); print $3, $4; exit}' "$WORK/criterion.txt")
fi

# --- Slurm ---------------------------------------------------------------
SL_STATUS="not run"
SL_LAT50="-"; SL_LAT99="-"; SL_TP="-"; SL_WALL="-"; SL_IDLE_CPU="-"; SL_LOAD_CPU="-"; SL_RSS="-"; SL_PEAK="-"
slurm_stop() {
    [ -f "$SWORK/slurmd.pid" ] && kill "$(cat "$SWORK/slurmd.pid")" 2>/dev/null
    [ -f "$SWORK/slurmctld.pid" ] && kill "$(cat "$SWORK/slurmctld.pid")" 2>/dev/null
    return 0
}
slurm_run() {
    if ! command -v slurmctld >/dev/null; then
        say "== installing slurm-wlm with apt"
        if ! (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >"$WORK/apt.log" 2>&1 ||
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; } >>"$WORK/apt.log" 2>&1); then
            SL_STATUS="apt-get install slurm-wlm failed (see $WORK/apt.log)"; return 1
        fi
    fi
    SWORK="$WORK/slurm"; mkdir -p "$SWORK/state" "$SWORK/spool" "$SWORK/jobs"
    # munge: a key and a running munged.
    if ! pgrep -x munged >/dev/null; then
        [ -s /etc/munge/munge.key ] || mungekey --create >/dev/null 2>&1 || true
        mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
        runuser -u munge -- /usr/sbin/munged >/dev/null 2>&1 || /usr/sbin/munged --force >/dev/null 2>&1 || true
        sleep 1
    fi
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        SL_STATUS="munge does not work here"; return 1
    fi
    local host; host=$(hostname -s)
    cat >"$SWORK/slurm.conf" <<EOF
ClusterName=bench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SWORK/state
SlurmdSpoolDir=$SWORK/spool
SlurmctldPidFile=$SWORK/slurmctld.pid
SlurmdPidFile=$SWORK/slurmd.pid
SlurmctldLogFile=$SWORK/slurmctld.log
SlurmdLogFile=$SWORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MinJobAge=600
MaxJobCount=100000
NodeName=$host NodeAddr=127.0.0.1 CPUs=$STATIONS State=UNKNOWN
PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$SWORK/slurm.conf"
    SLURM_STARTED=1
    slurmctld -f "$SLURM_CONF" >"$SWORK/ctld.out" 2>&1 || { SL_STATUS="slurmctld did not start: $(tail -n 3 "$SWORK/slurmctld.log" "$SWORK/ctld.out" 2>/dev/null | tr '\n' ' ')"; return 1; }
    slurmd -f "$SLURM_CONF" >"$SWORK/d.out" 2>&1 || { SL_STATUS="slurmd did not start: $(tail -n 3 "$SWORK/slurmd.log" "$SWORK/d.out" 2>/dev/null | tr '\n' ' ')"; return 1; }
    local i
    for i in $(seq 1 100); do
        sinfo -h -o %T 2>/dev/null | grep -q '^idle' && break
        sleep 0.2
    done
    if ! sinfo -h -o %T 2>/dev/null | grep -q '^idle'; then
        SL_STATUS="the slurm node never became idle: $(sinfo -h -o '%T %E' 2>&1 | head -n 2 | tr '\n' ' ')"; return 1
    fi
    local cpid dpid; cpid=$(cat "$SWORK/slurmctld.pid"); dpid=$(cat "$SWORK/slurmd.pid")
    cd "$SWORK/jobs"
    sleep 2
    local a b t0 t1
    t0=$(now_s); a=$(snap_ticks "$cpid" "$dpid"); sleep "$IDLE_SECS"; b=$(snap_ticks "$cpid" "$dpid"); t1=$(now_s)
    SL_IDLE_CPU=$(cpu_pct "$a" "$b" "$(echo "$t1 - $t0" | bc)")
    SL_RSS=$(rss_total_mb "$cpid" "$dpid")

    # Latency: sbatch one job, poll squeue until it runs or is gone.
    local lats=() j s ts te
    for i in $(seq 1 "$LAT_JOBS"); do
        ts=$(now_s)
        j=$(sbatch --parsable -o /dev/null --wrap /bin/true)
        while :; do
            s=$(squeue -h -j "$j" -o %T 2>/dev/null || true)
            [ "$s" = PENDING ] || break
            sleep 0.01
        done
        te=$(now_s)
        lats+=("$(echo "$te - $ts" | bc)")
        while [ -n "$(squeue -h -j "$j" -o %T 2>/dev/null)" ]; do sleep 0.05; done
    done
    read -r SL_LAT50 SL_LAT99 _ <<<"$(printf '%s\n' "${lats[@]}" | pctl)"

    # Throughput: the same JOBS trivial jobs as one job array (HTCondor's
    # `queue N` is one cluster of N procs; a Slurm array is its match).
    a=$(snap_ticks "$cpid" "$dpid"); t0=$(now_s)
    sbatch --parsable -o /dev/null --array="0-$((JOBS - 1))" --wrap /bin/true >/dev/null
    SL_PEAK=0
    while [ -n "$(squeue -h -o %i 2>/dev/null | head -n 1)" ]; do
        SL_PEAK=$(awk -v a="$SL_PEAK" -v b="$(rss_total_mb "$cpid" "$dpid")" 'BEGIN{print (b > a) ? b : a}')
        sleep 0.2
    done
    t1=$(now_s); b=$(snap_ticks "$cpid" "$dpid")
    SL_WALL=$(echo "$t1 - $t0" | bc)
    SL_TP=$(awk -v n="$JOBS" -v s="$SL_WALL" 'BEGIN{printf "%.1f", n / s}')
    SL_LOAD_CPU=$(cpu_pct "$a" "$b" "$SL_WALL")
    SL_STATUS="ran (slurm $(slurmctld -V 2>/dev/null | awk '{print $2}'), 1 node, CPUs=$STATIONS)"
    cd "$WORK"
}
if [ -z "${SKIP_SLURM:-}" ]; then
    say "== the same jobs on Slurm"
    slurm_run || say "bench: Slurm part skipped: $SL_STATUS"
fi

# --- HyperQueue ------------------------------------------------------------
HQ_STATUS="not run"; HQ_LAT50="-"; HQ_LAT99="-"; HQ_TP="-"; HQ_WALL="-"
if [ -z "${SKIP_HQ:-}" ]; then
    say "== the same jobs on HyperQueue"
    if ! python3 -c 'import hyperqueue' 2>/dev/null; then
        say "== installing hyperqueue with pip"
        pip install -q hyperqueue >"$WORK/pip.log" 2>&1 || HQ_STATUS="pip install hyperqueue failed (see $WORK/pip.log)"
    fi
    if python3 -c 'import hyperqueue' 2>/dev/null; then
        line=$(python3 "$ROOT/bench/pool/hq_bench.py" "$WORK/hq" "$STATIONS" "$JOBS" "$LAT_JOBS" 2>"$WORK/hq.log" | grep '^HQ ' || true)
        if [ -n "$line" ]; then
            read -r _ HQ_LAT50 HQ_LAT99 HQ_WALL HQ_TP HQ_VER <<<"$line"
            HQ_STATUS="ran (hyperqueue $HQ_VER, LocalCluster, $STATIONS workers of 1 core)"
        else
            HQ_STATUS="failed (see $WORK/hq.log)"
        fi
    fi
fi

# --- report --------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "-" }'; }
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
cat <<EOF

Pool benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r); load average $LOAD_START at the start, $LOAD_END at the end
Gleaner: \`glean up --stations $STATIONS\`${INTERVAL:+ --interval $INTERVAL} with its defaults
(coordinator + $STATIONS one-CPU stations); jobs /bin/true submitted at station0 by $( [ "$(id -u)" = 0 ] && echo "$BENCH_USER" || id -un ).
Slurm: $SL_STATUS
HyperQueue: $HQ_STATUS

| measure                                        | Gleaner | Slurm | HyperQueue | Gleaner ÷ Slurm | Gleaner ÷ HQ |
|------------------------------------------------|---------|-------|------------|-----------------|--------------|
| submit→running p50, idle pool ($LAT_JOBS jobs) | ${LAT50} s | ${SL_LAT50} s | ${HQ_LAT50} s | $(ratio "$LAT50" "$SL_LAT50") | $(ratio "$LAT50" "$HQ_LAT50") |
| submit→running p99, idle pool                  | ${LAT99} s | ${SL_LAT99} s | ${HQ_LAT99} s | $(ratio "$LAT99" "$SL_LAT99") | $(ratio "$LAT99" "$HQ_LAT99") |
| $JOBS jobs: total time                          | ${TP_SPAN} s | ${SL_WALL} s | ${HQ_WALL} s | $(ratio "$TP_SPAN" "$SL_WALL") | $(ratio "$TP_SPAN" "$HQ_WALL") |
| $JOBS jobs: throughput                          | ${TP} jobs/s | ${SL_TP} jobs/s | ${HQ_TP} jobs/s | $(ratio "$TP" "$SL_TP") | $(ratio "$TP" "$HQ_TP") |
| $JOBS jobs: queue wait p50 / p99                | ${Q50} / ${Q99} s | - | - | | |
| $JOBS jobs: not completed                       | ${FAILED} | - | - | | |
| daemons' CPU, idle (${IDLE_SECS}s)              | ${IDLE_CPU} % | ${SL_IDLE_CPU} % | - | | |
| daemons' CPU, during the $JOBS jobs             | ${LOAD_CPU} % | ${SL_LOAD_CPU} % | - | | |
| daemons' RSS, idle (total)                     | ${IDLE_RSS} MiB (coordinator ${IDLE_RSS_C}) | ${SL_RSS} MiB | - | | |
| daemons' PSS, idle (total; shared pages split)  | ${IDLE_PSS} MiB | - | - | | |
| daemons' RSS, peak under load                  | ${PEAK} MiB (coordinator ${PEAK_C}) | ${SL_PEAK} MiB | - | | |

A $BIG_JOBS-job cluster at station0 (Gleaner):
  submit (glean submit, wall):         ${BIG_SUBMIT:--} s
  glean q (summary + first page):      ${BIG_Q:--} s    (${BIG_QLINE:-})
  glean q --page 500:                  ${BIG_Q500:--} s
  glean rm of the cluster:             ${BIG_RM:--} s
  station0 RSS: before ${BIG_RSS0:--} MiB, peak ${BIG_PEAK:--} MiB, after ${BIG_RSS1:--} MiB

Coordinator, 10 000 advertising stations (criterion, pool code called directly):
  one periodic pass (tick):            ${ROUND_TICK}
  a round: 10 000 ads + tick:          ${ROUND_ALL}
EOF
