#!/usr/bin/env bash
# Installs Debian's chromium for the dashboard's browser tests, only when
# /usr/bin/chromium is missing. Needs root (or sudo) and the Debian archive.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "install-chromium: /usr/bin/chromium is missing and this is not root (no sudo either): install Debian's chromium package" >&2
		exit 1
	fi
fi
echo "install-chromium: installing Debian's chromium with apt-get" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version >&2
