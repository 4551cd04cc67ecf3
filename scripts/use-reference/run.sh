#!/usr/bin/env bash
# run.sh [OUT]
#
# Regenerates the TF.js reference fixture for the local embedder. Installs the
# exact package versions pinned in package.json into a temporary directory
# (install scripts disabled, no lockfile written, nothing left in the tree),
# then runs dump.js there. OUT defaults to vectors/testdata/use_lite/reference.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/vectors/testdata/use_lite/reference.json}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cp "$here/package.json" "$here/dump.js" "$tmp/"
(cd "$tmp" && npm install --ignore-scripts --no-package-lock --no-audit --no-fund --silent)
mkdir -p "$(dirname "$out")"
(cd "$tmp" && node dump.js "$out")
