#!/usr/bin/env bash
# Runs the installed gleaner units under a real systemd (part of
# scripts/test-deb.sh, after `dpkg -i` and with /etc/gleaner/pool.pub and
# a station token for "pkgtest" in place). Where systemd is this machine's
# init it uses it; otherwise it boots systemd in a throwaway container
# (systemd-nspawn, --volatile=overlay: the container sees this machine's
# files read-only under a tmpfs it writes to, and has only a loopback
# network), so nothing here changes this machine.
#
# Checks: the coordinator starts as `gleaner` and answers HTTP; killed
# with SIGKILL it is restarted (Restart=on-failure) after RestartSec;
# the station starts, moves itself into its delegated cgroup's leaf
# (Delegate=yes) and stops cleanly; `systemd-analyze security` online.
set -euo pipefail

fail() {
    echo "FAIL (booted): $*" >&2
    exit 1
}

root=/tmp/gleaner-deb-boot-root
name=gleaner-deb-boot
cg=
nspawn_pid=
cleanup() {
    if [ -n "$nspawn_pid" ]; then
        kill "$nspawn_pid" 2>/dev/null || true
        wait "$nspawn_pid" 2>/dev/null || true
    fi
    ! mountpoint -q "$root" || umount "$root"
    rmdir "$root" 2>/dev/null || true
    for d in $cg; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
}
trap cleanup EXIT

if [ -d /run/systemd/system ]; then
    echo "-- systemd is this machine's init: testing the units on it"
    inside() { "$@"; }
else
    echo "-- booting systemd in a container (systemd-nspawn)"
    # The container's cgroups: a subtree of our own per hierarchy that
    # systemd uses (this machine's init is not systemd, so nothing else
    # manages them), removed at the end.
    for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
        [ -d "$h" ] || continue
        mkdir -p "$h/$name"
        echo $$ >"$h/$name/cgroup.procs"
        cg="$cg $h/$name"
    done
    mkdir -p "$root"
    mountpoint -q "$root" || mount --bind / "$root"
    log=$(mktemp)
    systemd-nspawn -b --register=no --keep-unit --link-journal=no \
        --volatile=overlay --private-network -D "$root" -M "$name" \
        -- --unit=basic.target >"$log" 2>&1 </dev/null &
    nspawn_pid=$!
    leader=
    for _ in $(seq 300); do
        leader=$(ps --ppid "$nspawn_pid" -o pid= | head -1 | tr -d ' ')
        if [ -n "$leader" ] &&
            [ "$(nsenter -t "$leader" -a systemctl is-system-running 2>/dev/null)" = running ]; then
            break
        fi
        kill -0 "$nspawn_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$leader" ] || ! nsenter -t "$leader" -a systemctl is-system-running >/dev/null 2>&1; then
        tail -20 "$log"
        echo "SKIP booted units: systemd did not come up in a container here"
        exit 0
    fi
    inside() { nsenter -t "$leader" -a "$@"; }
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
echo "ok    coordinator active as gleaner (pid $pid), answering HTTP"
inside kill -KILL "$pid"
wait_for 20 restarted ||
    fail "no restart after SIGKILL"
wait_for 20 answers || fail "the restarted coordinator does not answer"
echo "ok    SIGKILL: restarted (NRestarts=$(prop gleaner-coordinator NRestarts)) after RestartSec, answering again"
inside systemd-analyze security --no-pager gleaner-coordinator.service | tail -1
inside systemctl stop gleaner-coordinator.service

echo "-- gleaner-station.service"
inside sed -i 's/^# name = "ws12"$/name = "pkgtest"/' /etc/gleaner/station.toml
inside systemctl start gleaner-station.service
wait_for 30 inside test -S /run/gleaner/pkgtest.sock || {
    inside journalctl -u gleaner-station --no-pager | tail -30
    fail "the station did not open its user socket"
}
active gleaner-station.service || fail "the station is not active"
pid=$(prop gleaner-station MainPID)
cgroup=$(inside sed -n 's/^0:://p' "/proc/$pid/cgroup")
case $cgroup in
    */gleaner-station.service/station) ;;
    *) fail "the station is in cgroup $cgroup, not its delegated leaf" ;;
esac
[ "$(prop gleaner-station Delegate)" = yes ] || fail "Delegate is not yes"
echo "ok    station active (pid $pid) in $cgroup, user socket open"
# What it said about its guests' isolation here (a container may deny
# some cgroup controllers; the station then says so and falls back).
inside journalctl -u gleaner-station --no-pager -o cat |
    grep -E 'WARN|ERROR|cgroup plan|moved into|slot accounts' | cut -c1-400 || true
inside systemctl stop gleaner-station.service
[ "$(prop gleaner-station Result)" = success ] || fail "the station stopped with $(prop gleaner-station Result)"
echo "ok    station stopped cleanly"
