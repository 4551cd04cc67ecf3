#!/usr/bin/env bash
# Installs Debian's chromium for the dashboard's browser tests, only when
# /usr/bin/chromium is missing. Needs root (or sudo) and the Debian archive
# (see apt-install.sh).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	exit 0
fi
bash "$(dirname "$0")/apt-install.sh" chromium fonts-dejavu-core
/usr/bin/chromium --version >&2
