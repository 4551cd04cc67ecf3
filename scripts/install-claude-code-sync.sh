#!/usr/bin/env bash
# Install the Claude Code sync plugin, claude-code-sync, at the version the
# end-to-end test (cmd/hindsight/plugin_e2e_test.go) is written against.
#
#   scripts/install-claude-code-sync.sh [DIR]
#
# DIR defaults to <repo>/.cache/npm/claude-code-sync (.cache/ is git-ignored).
# Idempotent: when DIR already holds that version it does nothing. The last
# line of output is the path of the plugin's CLI.
#
# The package declares no install-time scripts (only prepublishOnly, which
# runs when publishing), so it is installed with --ignore-scripts: nothing
# from the download runs at install time.
set -euo pipefail

PKG=claude-code-sync
VERSION=0.1.15

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/.cache/npm/$PKG}
cli=$dir/node_modules/.bin/$PKG

for tool in npm node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install-claude-code-sync: $tool not found on PATH" >&2
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

if [ "$(installed_version)" = "$VERSION" ] && [ -x "$cli" ]; then
	echo "$PKG@$VERSION is already installed in $dir" >&2
	echo "$cli"
	exit 0
fi

cd "$dir"
if [ ! -f package.json ]; then
	printf '{\n  "name": "hindsight-e2e-claude-code-sync",\n  "private": true\n}\n' >package.json
fi
npm install --no-audit --no-fund --ignore-scripts --save-exact "$PKG@$VERSION" >&2

got=$(installed_version)
if [ "$got" != "$VERSION" ] || [ ! -x "$cli" ]; then
	echo "install-claude-code-sync: expected $PKG@$VERSION with a CLI at $cli, found version '${got}'" >&2
	exit 1
fi
echo "installed $PKG@$VERSION in $dir" >&2
echo "$cli"
