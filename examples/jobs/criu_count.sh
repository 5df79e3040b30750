#!/bin/sh
# A job that knows nothing about checkpoints: its only state is a counter
# in the shell's memory. Run with `checkpoint_method = criu`, the station
# dumps the whole process with CRIU and restores it, here or on another
# station, and it counts on from where it was.
#   criu_count.sh STEPS SECONDS_PER_STEP
# Each step prints "step N" and, if $CRIU_COUNT_PROGRESS names a file,
# appends "PID N" to it (the tests read it to see what ran where).
steps=${1:-600}
pause=${2:-0.1}
i=0
exec 3>>criu_count.data
while [ "$i" -lt "$steps" ]; do
    i=$((i + 1))
    echo "step $i"
    echo "$i" >&3
    if [ -n "${CRIU_COUNT_PROGRESS:-}" ]; then
        echo "$$ $i" >> "$CRIU_COUNT_PROGRESS"
    fi
    sleep "$pause"
done
echo "counted to $steps" > criu_count.result
