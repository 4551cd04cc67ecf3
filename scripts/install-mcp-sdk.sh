#!/usr/bin/env bash
# Install the official MCP TypeScript SDK, @modelcontextprotocol/sdk, at the
# version the MCP end-to-end test (cmd/hindsight/mcp_e2e_test.go) is written
# against: its client connects to Hindsight over Streamable HTTP and stdio.
#
#   scripts/install-mcp-sdk.sh [DIR]
#
# DIR defaults to <repo>/.cache/npm/mcp-sdk (.cache/ is git-ignored).
# Idempotent: when DIR already holds that version it does nothing. The last
# line of output is DIR, where a script importing the SDK must live.
#
# Installed with --ignore-scripts: nothing from the download runs at install
# time.
set -euo pipefail

PKG=@modelcontextprotocol/sdk
VERSION=1.32.2

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/.cache/npm/mcp-sdk}

for tool in npm node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install-mcp-sdk: $tool not found on PATH" >&2
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
	printf '{\n  "name": "hindsight-e2e-mcp-sdk",\n  "private": true,\n  "type": "module"\n}\n' >package.json
fi
npm install --no-audit --no-fund --ignore-scripts --save-exact "$PKG@$VERSION" >&2

got=$(installed_version)
if [ "$got" != "$VERSION" ]; then
	echo "install-mcp-sdk: expected $PKG@$VERSION in $dir, found version '${got}'" >&2
	exit 1
fi
echo "installed $PKG@$VERSION in $dir" >&2
echo "$dir"
