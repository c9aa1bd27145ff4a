#!/usr/bin/env bash
# Installs Debian packages at pinned upstream versions:
#   scripts/apt-install.sh PACKAGE=UPSTREAM...
# UPSTREAM is the upstream version that matters (nginx=1.22 takes 1.22.1-9+deb12u12): the
# Debian revision is whatever the archive carries now, because each security update
# replaces it and an exact revision disappears from the archive within weeks. A package
# already installed at a matching upstream version is kept. Prints what is in place; fails,
# saying what the archive has instead, only when the upstream version itself is gone.
# Runs as root, or through passwordless sudo; refreshes the package lists before it
# installs anything, so that it takes the revision the archive carries today.
set -euo pipefail

# The upstream part of a Debian version: without the epoch and the Debian revision.
upstream() {
  local version=${1#*:}
  echo "${version%-*}"
}

# Whether an upstream version is the pinned one or a release of it (1.22 matches 1.22.1,
# not 1.221).
matches() {
  [[ $1 == "$2" || $1 == "$2"[.+~-]* ]]
}

installed() {
  { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true; } | sed -n 's/^install ok installed //p'
}

# The newest version of a package in the package lists whose upstream matches the pin.
candidate() {
  local package=$1 pin=$2 version
  for version in $(apt-cache madison "$package" 2>/dev/null | awk -F' [|] ' -v p="$package" '$1 ~ p {print $2}'); do
    if matches "$(upstream "$version")" "$pin"; then
      echo "$version"
      return
    fi
  done
}

sudo=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    sudo=(false)
  fi
fi
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends)

# The pins not installed at their upstream version.
missing=()
for spec in "$@"; do
  version=$(installed "${spec%%=*}")
  if [ -z "$version" ] || ! matches "$(upstream "$version")" "${spec#*=}"; then missing+=("$spec"); fi
done

if ((${#missing[@]})); then
  # Lists read earlier may name revisions the archive has replaced since: read them again.
  "${apt[@]}" update >/dev/null || { echo "apt-install: apt-get update failed (root or passwordless sudo is needed to install ${missing[*]})" >&2; exit 1; }
  install=()
  for spec in "${missing[@]}"; do
    package=${spec%%=*} pin=${spec#*=}
    version=$(candidate "$package" "$pin")
    if [ -z "$version" ]; then
      has=$(apt-cache madison "$package" 2>/dev/null | awk -F' [|] ' '{print $2}' | paste -sd, -)
      echo "apt-install: $package $pin is no longer in Debian's archive (it has: ${has:-nothing}); change its pin in scripts/debian-pins.sh" >&2
      exit 1
    fi
    install+=("$package=$version")
  done
  echo "apt-install: installing ${install[*]}" >&2
  "${apt[@]}" install "${install[@]}" >/dev/null || { echo "apt-install: could not install ${install[*]}" >&2; exit 1; }
fi
for spec in "$@"; do
  echo "apt-install: ${spec%%=*} $(installed "${spec%%=*}") (pinned upstream ${spec#*=})" >&2
done
