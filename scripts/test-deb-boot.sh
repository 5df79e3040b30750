#!/usr/bin/env bash
# Runs the installed gleaner units under a real systemd (part of
# scripts/test-deb.sh, after `dpkg -i`, `glean pool init` and `glean
# station join` as "pkgtest": the configurations and keys are in place). Where systemd is this machine's
# init it uses it; otherwise it boots systemd in a throwaway container
# (systemd-nspawn, --volatile=overlay: the container sees this machine's
# files read-only under a tmpfs it writes to, and has only a loopback
# network), so nothing here changes this machine.
#
# Checks: the coordinator starts as `gleaner` and answers; killed
# with SIGKILL it is restarted (Restart=on-failure) after RestartSec;
# the station starts and moves itself into its delegated cgroup's leaf
# (Delegate=yes); a user's job submitted on the station's socket is
# placed by the coordinator, runs as a slot account under the station's
# hardening and its output comes back as the user's; both units stop
# cleanly; `systemd-analyze security` online.
set -euo pipefail

fail() {
    echo "FAIL (booted): $*" >&2
    exit 1
}

root=/tmp/gleaner-deb-boot-root
name=gleaner-deb-boot
cg=
nspawn_pid=
leader=
cleanup() {
    if [ -n "$nspawn_pid" ]; then
        # A clean power-off first; SIGKILL if it does not come.
        [ -z "$leader" ] || timeout 10 nsenter -t "$leader" -a systemctl poweroff >/dev/null 2>&1 || true
        for _ in $(seq 200); do
            kill -0 "$nspawn_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$nspawn_pid" 2>/dev/null || true
        wait "$nspawn_pid" 2>/dev/null || true
    fi
    ! mountpoint -q "$root" || umount "$root"
    rmdir "$root" 2>/dev/null || true
    for d in $cg; do
        if [ -d "$d" ]; then
            find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
        fi
    done
}
trap cleanup EXIT

if [ -d /run/systemd/system ]; then
    echo "-- systemd is this machine's init: testing the units on it"
    inside() { "$@"; }
else
    echo "-- booting systemd in a container (systemd-nspawn)"
    # The container's cgroups: a subtree of its own in each hierarchy
    # systemd uses (this machine's init is not systemd, so nothing else
    # manages them), removed at the end.
    for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
        [ -d "$h" ] || continue
        mkdir -p "$h/$name"
        cg="$cg $h/$name"
    done
    mkdir -p "$root"
    mountpoint -q "$root" || mount --bind / "$root"
    log=$(mktemp)
    (
        for d in $cg; do echo "$BASHPID" >"$d/cgroup.procs"; done
        exec systemd-nspawn -b --register=no --keep-unit --link-journal=no \
            --volatile=overlay --private-network -D "$root" -M "$name" \
            -- --unit=basic.target
    ) >"$log" 2>&1 </dev/null &
    nspawn_pid=$!
    state=
    for _ in $(seq 300); do
        kill -0 "$nspawn_pid" 2>/dev/null || break
        leader=$(ps --ppid "$nspawn_pid" -o pid= 2>/dev/null | head -1 | tr -d ' ' || true)
        if [ -n "$leader" ]; then
            state=$(timeout 5 nsenter -t "$leader" -a systemctl is-system-running 2>/dev/null || true)
            case $state in running | degraded) break ;; esac
        fi
        sleep 0.1
    done
    case $state in
        running) ;;
        degraded)
            timeout 10 nsenter -t "$leader" -a systemctl --failed --no-pager || true
            ;;
        *)
            tail -20 "$log"
            echo "SKIP booted units: systemd did not come up in a container here (state: ${state:-none})"
            exit 0
            ;;
    esac
    inside() { timeout 120 nsenter -t "$leader" -a "$@"; }
fi

wait_for() { # wait_for SECONDS COMMAND...: until COMMAND succeeds
    local t=$(($1 * 10))
    shift
    for _ in $(seq "$t"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
prop() { inside systemctl show -p "$2" --value "$1"; }
active() { [ "$(inside systemctl is-active "$1")" = active ]; }
restarted() { [ "$(prop gleaner-coordinator NRestarts)" = 1 ]; }
answers() { inside bash -c 'exec 3<>/dev/tcp/127.0.0.1/9618 && printf "GET /v1/nothing HTTP/1.0\r\n\r\n" >&3 && head -1 <&3' | grep -q '^HTTP/1\.[01] '; }

echo "-- gleaner-coordinator.service"
inside systemctl start gleaner-coordinator.service
wait_for 20 answers || {
    inside journalctl -u gleaner-coordinator --no-pager | tail -20
    fail "the coordinator does not answer on 127.0.0.1:9618"
}
pid=$(prop gleaner-coordinator MainPID)
[ "$(inside ps -o user= -p "$pid")" = gleaner ] || fail "the coordinator does not run as gleaner"
echo "ok    coordinator active as gleaner (pid $pid), answering (a plain-HTTP probe gets its 400)"
inside kill -KILL "$pid"
wait_for 20 restarted ||
    fail "no restart after SIGKILL"
wait_for 20 answers || fail "the restarted coordinator does not answer"
echo "ok    SIGKILL: restarted (NRestarts=$(prop gleaner-coordinator NRestarts)) after RestartSec, answering again"
inside systemd-analyze security --no-pager gleaner-coordinator.service | tail -1
inside systemctl stop gleaner-coordinator.service
inside systemctl reset-failed gleaner-coordinator.service 2>/dev/null || true

echo "-- a pool of one: both units, a job from a user"
# Short periods so that the job is placed at once; the container's copy
# of the configuration is changed, never this machine's.
inside sed -i '/^state_dir/a advertise_period_secs = 2\nscheduling_interval_secs = 2\nstartup_grace_secs = 0' \
    /etc/gleaner/coordinator.toml
inside sed -i -e 's|^coordinator = .*|coordinator = "https://127.0.0.1:9618"|' \
    -e 's/^activity = .*/activity = { source = "always_idle" }/' \
    -e '/^state_dir/a advertise_secs = 2\nplacement_interval_secs = 1' /etc/gleaner/station.toml
inside systemctl start gleaner-coordinator.service gleaner-station.service
wait_for 30 inside test -S /run/gleaner/pkgtest.sock || {
    inside journalctl -u gleaner-station --no-pager | tail -30
    fail "the station did not open its user socket"
}
active gleaner-station.service || fail "the station is not active"
pid=$(prop gleaner-station MainPID)
cgroup_of_station() { inside sed -n 's/^0:://p' "/proc/$pid/cgroup"; }
in_leaf() { case $(cgroup_of_station) in */gleaner-station.service/station) ;; *) return 1 ;; esac; }
wait_for 20 in_leaf || {
    inside journalctl -u gleaner-station --no-pager -o cat | tail -20
    fail "the station is in cgroup $(cgroup_of_station), not its delegated leaf"
}
cgroup=$(cgroup_of_station)
[ "$(prop gleaner-station Delegate)" = yes ] || fail "Delegate is not yes"
echo "ok    station active (pid $pid) in $cgroup, user socket open"
# What it said about its guests' isolation here (a container may deny
# some cgroup controllers; the station then says so and falls back).
inside journalctl -u gleaner-station --no-pager -o cat |
    grep -E 'WARN|ERROR|cgroup plan|moved into|slot accounts' | cut -c1-300 || true

# A user's job, submitted on the user socket, placed by the coordinator
# on this station and run as a slot account under the unit's hardening:
# its output comes back into the user's directory, as the user's.
inside useradd --create-home pkguser
inside runuser -u pkguser -- sh -c '
    mkdir -p ~/.glean ~/job && cd ~/job &&
    echo "socket = \"/run/gleaner/pkgtest.sock\"" > ~/.glean/pool.toml &&
    printf "#!/bin/sh\nid -un\necho done\n" > job.sh && chmod +x job.sh &&
    printf "executable = job.sh\noutput = job.out\nerror = job.err\nlog = job.log\nqueue\n" > job.sub &&
    glean submit job.sub'
job_done() { inside grep -qx 'done' /home/pkguser/job/job.out; }
wait_for 90 job_done || {
    inside runuser -u pkguser -- glean q --all || true
    inside journalctl -u gleaner-station --no-pager -o cat | tail -20
    fail "the job did not finish"
}
ran_as=$(inside head -1 /home/pkguser/job/job.out)
owner=$(inside stat -c %U /home/pkguser/job/job.out)
case $ran_as in gleaner-slot[0-9]*) ;; *) fail "the job ran as $ran_as" ;; esac
[ "$owner" = pkguser ] || fail "job.out belongs to $owner"
echo "ok    job ran as $ran_as; job.out came back owned by $owner"

inside systemctl stop gleaner-station.service gleaner-coordinator.service
[ "$(prop gleaner-station Result)" = success ] || fail "the station stopped with $(prop gleaner-station Result)"
[ "$(prop gleaner-coordinator Result)" = success ] || fail "the coordinator stopped with $(prop gleaner-coordinator Result)"
echo "ok    both units stopped cleanly"
