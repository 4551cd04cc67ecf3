#!/usr/bin/env bash
# Installs Debian's postgresql for the record store's PostgreSQL tests
# (internal/pgtest), only when no initdb is found where the tests look.
# Needs root (or sudo) and the Debian archive.
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then
	exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "install-postgres: initdb is missing and this is not root (no sudo either): install Debian's postgresql package" >&2
		exit 1
	fi
fi
echo "install-postgres: installing Debian's postgresql with apt-get" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/initdb >&2
