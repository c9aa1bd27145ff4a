#!/usr/bin/env bash
# Installs Debian packages at pinned versions unless they are installed already:
#   scripts/apt-install.sh PACKAGE=VERSION...
# As root, or through passwordless sudo; refreshes the package lists once if a version is
# not found. Says what it needs and exits 1 when it cannot install.
set -euo pipefail
missing=()
for spec in "$@"; do
  package=${spec%%=*} version=${spec#*=}
  if [ "$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || true)" != "$version" ]; then
    missing+=("$spec")
  fi
done
((${#missing[@]} == 0)) && exit 0
sudo=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "apt-install: ${missing[*]} needed: run 'apt-get install ${missing[*]}' as root" >&2
    exit 1
  fi
fi
echo "apt-install: installing ${missing[*]}" >&2
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends)
if ! "${apt[@]}" install "${missing[@]}" >/dev/null; then
  "${apt[@]}" update >/dev/null
  "${apt[@]}" install "${missing[@]}" >/dev/null
fi
