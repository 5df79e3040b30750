#!/usr/bin/env bash
# Builds the Debian package target/debian/gleaner_<version>_<arch>.deb
# (docs/packaging.md) with cargo-deb: the glean binary (and the condor_*
# links to it), the systemd units,
# the default configuration, the maintainer scripts, and manual pages and
# shell completions generated here from the binary's own CLI (never
# committed, so never stale).
#
#   scripts/build-deb.sh         release build; debug symbols go into a
#                                separate gleaner-dbgsym_<version>_<arch>.ddeb
#   scripts/build-deb.sh --dev   package the dev-profile binary the test
#                                suite built (stripped, fast compression):
#                                for CI's install test, not for release
#
# Prints the package's path as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_DEB_VERSION=3.8.0
profile=release
case "${1:-}" in
    "") ;;
    --dev) profile=dev ;;
    *)
        echo "usage: scripts/build-deb.sh [--dev]" >&2
        exit 2
        ;;
esac

if [ "$(cargo deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
    cargo install --locked "cargo-deb@$CARGO_DEB_VERSION"
fi

target_dir=${CARGO_TARGET_DIR:-target}
case $profile in
    release)
        bin=$target_dir/release/glean
        cargo build --quiet --profile release -p gleaner-cli --bin glean
        ;;
    dev)
        # The binary the test suite built: the same selection as the
        # tests' build (the workspace with its dev-dependencies), so
        # nothing is compiled again. `-p gleaner-cli --bin glean` alone
        # resolves other features for shared dependencies and rebuilt
        # most of them.
        bin=$target_dir/debug/glean
        cargo build --quiet --profile dev --workspace --tests
        ;;
esac

# Generated from this binary, into the paths [package.metadata.deb]
# names (ignored by git).
gen=packaging/generated
rm -rf "$gen"
"$bin" generate man "$gen/man"
gzip -9n "$gen"/man/*.1
"$bin" generate completions "$gen/completions"
# HTCondor's command names, as links to glean beside it in /usr/bin.
"$bin" generate condor-links "$gen/bin"

version=$("$bin" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
out=target/debian/gleaner_${version}_${arch}.deb
mkdir -p target/debian
rm -f "$out"
# A directory: cargo-deb names the files itself (revision "" in the
# metadata: gleaner_<version>_<arch>.deb, gleaner-dbgsym_….ddeb).
args=(-p gleaner-cli --no-build --profile "$profile" --output target/debian)
if [ "$profile" = dev ]; then
    args+=(--no-dbgsym --no-separate-debug-symbols --strip --fast)
fi
cargo deb "${args[@]}"
[ -f "$out" ] || {
    echo "build-deb: cargo-deb made no $out" >&2
    exit 1
}
echo "$out"
