#!/usr/bin/env bash
# Tests the Debian package on this machine (root): its contents, an
# install, what the maintainer scripts made (the `gleaner` user, the
# state directories, slot accounts the station accepts), a pool made as
# docs/deploy.md says (`glean pool init`, the coordinator's command line
# run by hand as its unit's user, `glean token create --station`, `glean
# station join`) with every file where and whose it must be, a reinstall
# that changes none of them and asks nothing, the units (`systemd-analyze
# verify` and `security`), `dpkg-reconfigure` after a change of
# slot_count, and a purge that leaves nothing behind (keys included). Where
# systemd-nspawn is installed it also boots systemd in a throwaway
# container over a read-only view of this machine and runs both units
# there. See docs/packaging.md.
#
#   scripts/test-deb.sh target/debian/gleaner_<version>_<arch>.deb
#
# Refuses to run where a `gleaner` package is installed already: the
# test purges what it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

deb=${1:?usage: scripts/test-deb.sh PACKAGE.deb}
checks=0
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() {
    checks=$((checks + 1))
    echo "ok    $*"
}

[ "$(id -u)" = 0 ] || fail "must run as root (dpkg -i)"
if dpkg-query -W -f '${db:Status-Status}' gleaner 2>/dev/null | grep -qv '^not-installed$'; then
    echo "SKIP package test: a gleaner package is installed on this machine; not touching it"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
started=$(date +%s)

# What was there before, so that the purge is checked against it.
accounts() { getent passwd | cut -d: -f1 | grep -E '^gleaner(-slot[0-9]+)?$' | sort || true; }
accounts_before=$(accounts)
had_var_lib_gleaner=no
[ ! -e /var/lib/gleaner ] || had_var_lib_gleaner=yes
for p in /etc/gleaner /var/lib/gleaner/coordinator /var/lib/gleaner/station; do
    [ ! -e "$p" ] || fail "$p exists before the install (another Gleaner or a test left it)"
done

cleanup() {
    if dpkg-query -W -f '${db:Status-Status}' gleaner 2>/dev/null | grep -qv '^not-installed$'; then
        dpkg --purge gleaner >/dev/null 2>&1 || true
    fi
    [ -z "${coord_pid:-}" ] || kill "$coord_pid" 2>/dev/null || true
}
trap cleanup EXIT

echo "== dpkg-deb -c $deb"
contents=$(dpkg-deb -c "$deb")
echo "$contents"
for f in usr/bin/glean usr/share/gleaner/coordinator.toml usr/share/gleaner/station.toml \
    usr/lib/systemd/system/gleaner-coordinator.service \
    usr/lib/systemd/system/gleaner-station.service \
    usr/share/man/man1/glean.1.gz usr/share/man/man1/glean-station.1.gz \
    usr/share/man/man1/glean-token-create.1.gz \
    usr/share/bash-completion/completions/glean \
    usr/share/zsh/vendor-completions/_glean \
    usr/share/fish/vendor_completions.d/glean.fish \
    usr/share/doc/gleaner/packaging.md usr/share/doc/gleaner/copyright; do
    grep -q " \./$f\$" <<<"$contents" || fail "the package lacks $f"
done
ok "dpkg-deb -c lists the binary, config templates, units, man pages, completions, docs"
for t in condor_submit condor_q condor_rm condor_hold condor_release condor_history \
    condor_status condor_submit_dag condor_wait condor_userprio condor_tail condor_watch_q \
    condor_qedit condor_version condor_config_val; do
    grep -q " \./usr/bin/$t -> glean\$" <<<"$contents" || fail "the package lacks the link usr/bin/$t -> glean"
done
ok "dpkg-deb -c lists HTCondor's command names as links to glean"
# `glean pool init` and `glean station join` write /etc/gleaner: a
# conffile there would be the administrator's and the package's at once,
# and an upgrade would stop at dpkg's question (or replace what they wrote).
! grep -q ' \./etc/' <<<"$contents" || fail "the package ships files in /etc: $(grep ' \./etc/' <<<"$contents")"
conffiles=$(dpkg-deb -I "$deb" conffiles 2>/dev/null || true)
[ -z "$conffiles" ] || fail "conffiles are: $conffiles"
ok "no conffiles, nothing shipped in /etc (pool init and join write it)"

echo "== dpkg -i"
dpkg -i "$deb"
version=$(dpkg-deb -f "$deb" Version)
out=$(/usr/bin/glean --version)
echo "$out"
[ "$out" = "glean $version" ] || fail "glean --version says '$out', the package is $version"
ok "glean --version from the installed binary: $out"
cv=$(/usr/bin/condor_version)
grep -q '^\$CondorVersion: [0-9.]* .* \$$' <<<"$cv" || fail "condor_version says: $cv"
ok "condor_version (a link to glean) answers as HTCondor's: $(head -1 <<<"$cv")"

# The coordinator's user: a system account nobody logs in to.
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd gleaner) || fail "no user gleaner"
[ "$uid" -lt 1000 ] && [ "$home" = /nonexistent ] && [ "${shell##*/}" = nologin ] ||
    fail "gleaner: uid $uid home $home shell $shell"
ok "user gleaner: system uid $uid, home $home, shell $shell"
mode() { stat -c '%U:%G %a' "$1"; }
[ "$(mode /var/lib/gleaner/coordinator)" = "gleaner:gleaner 700" ] ||
    fail "/var/lib/gleaner/coordinator is $(mode /var/lib/gleaner/coordinator)"
[ "$(mode /var/lib/gleaner/station)" = "root:root 700" ] ||
    fail "/var/lib/gleaner/station is $(mode /var/lib/gleaner/station)"
ok "state directories: coordinator gleaner 0700, station root 0700"

# Slot accounts: one per CPU by default, each as the station's rules want.
mapfile -t slots < <(glean generate slot-accounts --config /etc/gleaner/station.toml | cut -d' ' -f1)
[ "${#slots[@]}" = "$(nproc)" ] || fail "${#slots[@]} slot accounts for $(nproc) CPUs"
for s in "${slots[@]}"; do
    IFS=: read -r _ _ uid gid gecos home shell < <(getent passwd "$s") || fail "no account $s"
    [ "$(getent group "$gid" | cut -d: -f1)" = "$s" ] || fail "$s: group $gid is not its own"
    [ "$home" = /nonexistent ] && [ "${shell##*/}" = nologin ] && [ "$gecos" = "Gleaner guest slot" ] ||
        fail "$s: home $home shell $shell gecos $gecos"
done
ok "slot accounts ${slots[*]}: own group, no home, no login shell"

echo "== a pool as docs/deploy.md makes it: glean pool init"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# The configuration says 9618 (the booted test below runs it there, in a
# network of its own); run by hand here it gets a free port instead.
glean pool init --name pkgtest --address 127.0.0.1 --listen 127.0.0.1:9618
[ "$(mode /etc/gleaner/coordinator.toml)" = "root:root 644" ] ||
    fail "coordinator.toml is $(mode /etc/gleaner/coordinator.toml)"
for f in signing.key ca.key coordinator.key; do
    [ "$(mode "/var/lib/gleaner/coordinator/$f")" = "gleaner:gleaner 600" ] ||
        fail "$f is $(mode "/var/lib/gleaner/coordinator/$f"), not the coordinator's alone"
done
for f in pool.pub ca.pem coordinator.crt; do
    [ "$(stat -c %U "/var/lib/gleaner/coordinator/$f")" = gleaner ] ||
        fail "$f is $(mode "/var/lib/gleaner/coordinator/$f")"
done
ok "pool init as root: /etc/gleaner/coordinator.toml; keys, CA and certificate gleaner's (keys 0600)"

echo "== the coordinator's ExecStart by hand, as its unit's user"
exec_start=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/gleaner-coordinator.service)
[ "$exec_start" = "/usr/bin/glean coordinator --config /etc/gleaner/coordinator.toml" ] ||
    fail "unexpected ExecStart: $exec_start"
cport=$(free_port)
coord_log=$(mktemp)
# With the unit's environment (Environment=GLEAN_LOG=info).
# shellcheck disable=SC2086 # the unit's command line, split as systemd does
GLEAN_LOG=info setpriv --reuid=gleaner --regid=gleaner --clear-groups --no-new-privs \
    $exec_start --listen "127.0.0.1:$cport" >"$coord_log" 2>&1 &
coord_pid=$!
for _ in $(seq 100); do
    grep -q "TLS on" "$coord_log" && (exec 3<>"/dev/tcp/127.0.0.1/$cport") 2>/dev/null && break
    kill -0 "$coord_pid" 2>/dev/null || { cat "$coord_log"; fail "the coordinator exited (above)"; }
    sleep 0.1
done
grep -q "TLS on" "$coord_log" || { cat "$coord_log"; fail "the coordinator did not start with TLS"; }
ok "coordinator as gleaner reads the keys pool init made: $(grep -o 'TLS on.*' "$coord_log" | head -1 | cut -c1-90)"

echo "== glean token create --station, glean station join"
join_token=$(glean token create --config /etc/gleaner/coordinator.toml --station pkgtest)
[ "$(stat -c %U /var/lib/gleaner/coordinator/tokens.json)" = gleaner ] ||
    fail "tokens.json written by root is not the coordinator's"
glean station join "https://127.0.0.1:$cport" --name pkgtest --token "$join_token" \
    --listen 127.0.0.1:9620 --address https://127.0.0.1:9620
for f in station.key station.token; do
    [ "$(mode "/etc/gleaner/$f")" = "root:root 600" ] || fail "$f is $(mode "/etc/gleaner/$f")"
done
for f in station.crt pool-ca.pem pool.pub station.toml; do
    [ "$(mode "/etc/gleaner/$f")" = "root:root 644" ] || fail "$f is $(mode "/etc/gleaner/$f")"
done
# The station runs as root (its unit has no User=): root's files are its.
grep -qx 'delegated = true' /etc/gleaner/station.toml &&
    grep -qx 'create_slot_users = false' /etc/gleaner/station.toml ||
    fail "station.toml lacks the package's [isolation] settings: $(cat /etc/gleaner/station.toml)"
ok "join: key and token root 0600, certificate, CA, pool.pub, station.toml with the package's template"
kill "$coord_pid"
wait "$coord_pid" || true
coord_pid=

echo "== glean station --check-config"
glean station --config /etc/gleaner/station.toml --check-config ||
    fail "the station refuses what the join wrote"
ok "station --check-config: configuration, credentials, slot accounts accepted"

echo "== reinstall (the upgrade path): nothing asked, nothing of the pool changed"
snapshot() {
    find /etc/gleaner /var/lib/gleaner/coordinator -type f | sort | while read -r f; do
        echo "$f $(stat -c '%U:%G %a' "$f") $(sha256sum <"$f" | cut -d' ' -f1)"
    done
}
before=$(snapshot)
dpkg -i "$deb" </dev/null >/dev/null || fail "dpkg -i over the installed package (no terminal to answer on)"
after=$(snapshot)
[ "$before" = "$after" ] || fail "the reinstall changed: $(diff <(echo "$before") <(echo "$after") || true)"
ok "reinstall: $(wc -l <<<"$after") files of /etc/gleaner and the coordinator's state unchanged, owners and modes too"

echo "== systemd-analyze"
units=(/usr/lib/systemd/system/gleaner-coordinator.service /usr/lib/systemd/system/gleaner-station.service)
man=no
! command -v man >/dev/null || man=yes
verify=$(systemd-analyze verify --man="$man" "${units[@]}" 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify: $verify"
ok "systemd-analyze verify --man=$man: both units clean"
security=$(systemd-analyze security --offline=true --no-pager "${units[0]}" 2>&1 || true)
score=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' <<<"$security")
echo "$security" | tail -3
[ -n "$score" ] || fail "no exposure score from systemd-analyze security"
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' ||
    fail "coordinator exposure $score is above 2.0"
ok "systemd-analyze security gleaner-coordinator.service: exposure $score"
station_score=$(systemd-analyze security --offline=true --no-pager "${units[1]}" 2>&1 |
    sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' || true)
echo "(station, root by necessity: exposure ${station_score:-?})"

echo "== dpkg-reconfigure after a change of slot_count"
more=$(($(nproc) + 1))
sed -i "s/^# slot_count = 4$/slot_count = $more/" /etc/gleaner/station.toml
grep -q "^slot_count = $more$" /etc/gleaner/station.toml || fail "could not set slot_count"
dpkg-reconfigure gleaner
getent passwd "gleaner-slot$more" >/dev/null || fail "dpkg-reconfigure made no gleaner-slot$more"
glean station --config /etc/gleaner/station.toml --name pkgtest --check-config >/dev/null ||
    fail "the station refuses the accounts after dpkg-reconfigure"
ok "slot_count = $more and dpkg-reconfigure: gleaner-slot$more made, station accepts all"

if command -v systemd-nspawn >/dev/null; then
    scripts/test-deb-boot.sh || fail "the units under systemd (above)"
    ok "booted systemd: both units run (scripts/test-deb-boot.sh)"
else
    echo "SKIP booted units: no systemd-nspawn (apt-get install systemd-container)"
fi

echo "== dpkg --purge"
dpkg --purge gleaner
[ ! -e /etc/gleaner ] || fail "/etc/gleaner left: $(ls -A /etc/gleaner)"
for p in /usr/bin/glean /var/lib/gleaner/coordinator /var/lib/gleaner/station \
    /var/lib/gleaner/package-accounts /usr/lib/systemd/system/gleaner-station.service; do
    [ ! -e "$p" ] || fail "$p left after purge"
done
[ $had_var_lib_gleaner = yes ] || [ ! -e /var/lib/gleaner ] ||
    fail "/var/lib/gleaner left: $(ls -A /var/lib/gleaner)"
[ "$(accounts)" = "$accounts_before" ] ||
    fail "accounts after purge: $(accounts | tr '\n' ' ') (before: $(tr '\n' ' ' <<<"$accounts_before"))"
ok "purge: no /etc/gleaner, no state (keys, CA, certificates, tokens), the package's accounts and groups gone"
for g in gleaner "${slots[@]}" "gleaner-slot$more"; do
    ! grep -q "^$g:" <<<"$accounts_before" || continue
    ! getent group "$g" >/dev/null || fail "group $g left after purge"
done

echo "package checks: $checks ok in $(($(date +%s) - started)) s"
