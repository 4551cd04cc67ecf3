#!/usr/bin/env bash
# Installs the Weaviate server the tests run against, with `go install` at a
# pinned version (cached in GOPATH/bin after the first build, which takes a
# few minutes), and prints the binary's path.
#   scripts/weaviate.sh install     build if missing, print the path
#   scripts/weaviate.sh path        print the path (no build)
set -euo pipefail
WEAVIATE_VERSION=${WEAVIATE_VERSION:-v1.35.2}
bindir="$(go env GOPATH)/bin"
bin="$bindir/weaviate-server-$WEAVIATE_VERSION"

case "${1:-install}" in
path)
	echo "$bin"
	;;
install)
	if [ -x "$bin" ]; then
		echo "$bin"
		exit 0
	fi
	echo "building weaviate-server $WEAVIATE_VERSION with go install (first time only, a few minutes)..." >&2
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	GOBIN="$tmp" CGO_ENABLED=0 go install "github.com/weaviate/weaviate/cmd/weaviate-server@$WEAVIATE_VERSION" >&2
	mkdir -p "$bindir"
	mv "$tmp/weaviate-server" "$bin"
	echo "$bin"
	;;
*)
	echo "usage: $0 install|path" >&2
	exit 2
	;;
esac
