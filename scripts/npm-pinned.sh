#!/usr/bin/env bash
# Install one npm package at a pinned version into its own directory, for the
# end-to-end tests that run real clients: claude-code-sync 0.1.15
# (cmd/hindsight/plugin_e2e_test.go) and the official MCP TypeScript SDK,
# @modelcontextprotocol/sdk 1.32.2 (cmd/hindsight/mcp_e2e_test.go).
#
#   scripts/npm-pinned.sh PKG VERSION DIR
#
# DIR is usually under <repo>/.cache/npm (.cache/ is git-ignored). Idempotent:
# when DIR already holds PKG@VERSION it does nothing. The last line of output
# is DIR (a script importing the package must live there; a package's CLI is
# DIR/node_modules/.bin/NAME).
#
# Installed with --ignore-scripts: nothing from the download runs at install
# time (neither package declares install-time scripts).
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: scripts/npm-pinned.sh PKG VERSION DIR" >&2
	exit 2
fi
PKG=$1 VERSION=$2 dir=$3

for tool in npm node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "npm-pinned: $tool not found on PATH" >&2
		exit 127
	fi
done

installed_version() {
	local pj=$dir/node_modules/$PKG/package.json
	[ -f "$pj" ] && node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$pj" 2>/dev/null || true
}

mkdir -p "$dir"
# Two test runs may install at once; take a lock where flock exists.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$dir/.install.lock"
	flock 9
fi

if [ "$(installed_version)" = "$VERSION" ]; then
	echo "$PKG@$VERSION is already installed in $dir" >&2
	echo "$dir"
	exit 0
fi

cd "$dir"
if [ ! -f package.json ]; then
	printf '{\n  "name": "hindsight-e2e",\n  "private": true\n}\n' >package.json
fi
npm install --no-audit --no-fund --ignore-scripts --save-exact "$PKG@$VERSION" >&2

got=$(installed_version)
if [ "$got" != "$VERSION" ]; then
	echo "npm-pinned: expected $PKG@$VERSION in $dir, found version '${got}'" >&2
	exit 1
fi
echo "installed $PKG@$VERSION in $dir" >&2
echo "$dir"
