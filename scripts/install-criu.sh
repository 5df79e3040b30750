#!/usr/bin/env bash
# Installs a CRIU that works on this kernel, for Gleaner's transparent
# checkpoints (`checkpoint_method = criu`), if there is none yet.
#
# Debian 12's criu 3.17 fails `criu check` on kernels >= 6.13 (vDSO
# layout, checkpoint-restore/criu#2532), and trixie's 4.1 binary needs a
# newer libc. So this builds the criu binary from Debian trixie's source
# package (upstream tarball, hash pinned below) against bookworm's
# libraries, and installs it as /usr/local/sbin/criu. apt's own lists and
# sources are left untouched (a private apt state under the build dir).
#
# Never fails: without a working CRIU the CRIU tests print "skipped" and
# stations do not advertise HasCRIU. Needs root.
set -uo pipefail

VERSION=4.1.1
SHA256=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe
PREFIX=/usr/local/sbin

works() {
    command -v criu >/dev/null 2>&1 || return 1
    local v
    v=$(criu --version 2>/dev/null | sed -n 's/^Version: *\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
    [ -n "$v" ] || return 1
    set -- $v
    { [ "$1" -gt 4 ] || { [ "$1" -eq 4 ] && [ "$2" -ge 1 ]; }; } || return 1
    criu check >/dev/null 2>&1
}

skip() {
    echo "install-criu: CRIU not installed ($*); CRIU tests will be skipped"
    exit 0
}

if works; then
    echo "install-criu: $(criu --version | head -1) works already"
    exit 0
fi
[ "$(id -u)" = 0 ] || skip "not root"

work=${CRIU_BUILD_DIR:-/tmp/gleaner-criu-build}
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src.d"
cat >"$work/src.d/trixie-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
apt_private=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/src.d"
    -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache")

echo "install-criu: build dependencies"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    gcc make pkg-config libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev \
    protobuf-compiler python3-protobuf libnl-3-dev libnet1-dev libcap-dev \
    libbsd-dev >/dev/null || skip "build dependencies could not be installed"

tarball="$work/criu_${VERSION}.orig.tar.xz"
if ! echo "$SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
    echo "install-criu: fetching Debian's criu $VERSION source"
    apt-get "${apt_private[@]}" update -qq >/dev/null 2>&1 || skip "no trixie source index"
    # Only the upstream tarball is needed; apt checks it against the signed
    # Sources index, and so does the pinned hash below.
    (cd "$work" && apt-get "${apt_private[@]}" source --download-only -qq "criu=$VERSION-1") \
        >/dev/null 2>&1 || true
    echo "$SHA256  $tarball" | sha256sum -c --status 2>/dev/null ||
        skip "criu_${VERSION}.orig.tar.xz missing or not the pinned one"
fi

echo "install-criu: building criu $VERSION"
rm -rf "$work/criu-$VERSION"
tar -C "$work" -xf "$tarball" || skip "cannot unpack the source"
make -C "$work/criu-$VERSION" -j"$(nproc)" criu >"$work/build.log" 2>&1 ||
    skip "build failed, see $work/build.log"
install -m 0755 "$work/criu-$VERSION/criu/criu" "$PREFIX/criu" || skip "cannot install"
hash -r
if works; then
    echo "install-criu: installed $(criu --version | head -1) as $PREFIX/criu"
else
    skip "the built criu does not pass \`criu check\` here"
fi
