#!/bin/sh
# A self-checkpointing job (HTCondor's checkpoint_exit_code convention).
#
#   selfckpt.sh STEPS EVERY [STEP_SECS]
#
# Runs STEPS steps of a deterministic computation, printing one line per
# step. Every EVERY steps, and whenever it receives SIGTERM (the station's
# checkpoint signal), it saves its state to selfckpt.state and exits with
# code 85; the station ships the file home and restarts the job, here or on
# another station, and the job resumes from the saved step. The final value
# goes to selfckpt.result.
#
# If SELFCKPT_PROGRESS names a file, every executed step is appended to it
# as "PID STEP" (tests use it to measure work lost to failures).
set -u
steps=${1:-100}
every=${2:-10}
step_secs=${3:-0.05}
state=selfckpt.state

i=0
v=1
if [ -f "$state" ]; then
    read -r i v < "$state"
fi
want=0
trap 'want=1' TERM

save_and_exit() {
    printf '%s %s\n' "$i" "$v" > "$state.tmp" && mv "$state.tmp" "$state"
    exit 85
}

since=0
while [ "$i" -lt "$steps" ]; do
    # Signals only set a flag: the state saved always matches the last
    # line printed.
    if [ "$want" = 1 ]; then save_and_exit; fi
    if [ "$since" -ge "$every" ]; then save_and_exit; fi
    sleep "$step_secs" &
    wait $! 2>/dev/null || true
    if [ "$want" = 1 ]; then save_and_exit; fi
    i=$((i + 1))
    v=$(( (v * 31 + i) % 1000003 ))
    echo "step $i $v"
    if [ -n "${SELFCKPT_PROGRESS:-}" ]; then echo "$$ $i" >> "$SELFCKPT_PROGRESS"; fi
    since=$((since + 1))
done
echo "$v" > selfckpt.result
echo "done $v"
exit 0
