#!/usr/bin/env bash
# Installs Debian packages with apt-get, the one place the install scripts
# (install-chromium.sh, install-postgres.sh) do it:
#   scripts/apt-install.sh PKG...
# Packages dpkg already lists as installed are left alone; when none is
# missing it does nothing (no apt-get update either). Otherwise it runs
# apt-get update once and apt-get install -y --no-install-recommends for the
# missing ones, noninteractively, as root or through sudo; it fails with a
# message when it is neither root nor has sudo.
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 PKG..." >&2
	exit 2
fi
missing=()
for pkg in "$@"; do
	if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]; then
		missing+=("$pkg")
	fi
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "apt-install: ${missing[*]} not installed and this is not root (no sudo either): install Debian's ${missing[*]} with apt-get as root" >&2
		exit 1
	fi
fi
echo "apt-install: installing Debian's ${missing[*]} with apt-get" >&2
"${SUDO[@]}" apt-get update -qq
# env, not a prefix assignment: sudo resets the environment.
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
