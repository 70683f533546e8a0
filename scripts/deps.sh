#!/bin/sh
# Installs the Debian packages this project builds with, if any are missing.
# Quiet and fast when everything is there. Uses apt-get as root, else sudo,
# else prints the exact command to run and fails.
#
#   scripts/deps.sh          install what is missing
#   scripts/deps.sh --list   print the package list and exit
set -eu

PACKAGES="build-essential pkg-config libncurses-dev libcunit1-dev doxygen graphviz libstb-dev
libcjson-dev libopenblas-dev libopenblas-openmp-dev libjs-mathjax tmux"

if [ "${1:-}" = "--list" ]; then
    echo $PACKAGES
    exit 0
fi

missing=""
for p in $PACKAGES; do
    # dpkg-query prints "install ok installed" for a package that is fully installed
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        *"ok installed") ;;
        *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0

echo "deps: installing missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo"
elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
    SUDO="sudo" # will ask for a password on the terminal
else
    echo "deps: not root and sudo is not available; please run:" >&2
    echo "    apt-get update && apt-get install -y$missing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# update once, then install; retry the install after an update if the lists are stale
if ! $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1; then
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q --no-install-recommends $missing
fi
echo "deps: done"
