#!/usr/bin/env bash
# Installs Debian's postgresql for the record store's PostgreSQL tests
# (internal/pgtest), only when no initdb is found where the tests look.
# Needs root (or sudo) and the Debian archive (see apt-install.sh).
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then
	exit 0
fi
bash "$(dirname "$0")/apt-install.sh" postgresql
ls /usr/lib/postgresql/*/bin/initdb >&2
