#!/usr/bin/env bash
# Verifies that vendor/candle-core is the crates.io release of candle-core 0.11.1 plus exactly
# vendor/candle-core.patch (and minus the benches, examples and tests the release ships).
# Fetches the release through cargo, applies the patch to it, compares the trees byte for byte.
# Run from anywhere; exits non-zero, naming the differences, if the vendored crate drifted.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=0.11.1
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# A throwaway package outside the workspace (no [patch]) makes cargo download the release.
mkdir -p "$tmp/probe/src"
cat > "$tmp/probe/Cargo.toml" <<TOML
[package]
name = "candle-core-release-probe"
version = "0.0.0"
edition = "2021"
[dependencies]
candle-core = "=$version"
TOML
touch "$tmp/probe/src/lib.rs"
(cd "$tmp/probe" && cargo fetch --quiet)
crate_file="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/candle-core-$version.crate | head -1)"

mkdir "$tmp/release"
tar xzf "$crate_file" -C "$tmp/release"
expected="$tmp/release/candle-core-$version"
rm -rf "$expected"/{benches,examples,tests,Cargo.lock,Cargo.toml.orig}
git -C "$expected" apply --whitespace=nowarn "$here/candle-core.patch"

if diff -r "$expected" "$here/candle-core"; then
  echo "vendor/candle-core = candle-core $version + vendor/candle-core.patch"
else
  echo "vendor/candle-core differs from candle-core $version + vendor/candle-core.patch (above)" >&2
  exit 1
fi
