#!/bin/sh
# Installs the Debian packages this project builds with, if any are missing.
# Quiet and fast when everything is there. Uses apt-get as root, else sudo,
# else prints the exact command to run and fails.
#
#   scripts/deps.sh              install what `make run`, `make test` and `make docs` need
#   scripts/deps.sh PKG...       also these: `make docs` asks for gnuplot-nox (the book's plots)
#                                and aha (the viewer's screens, captured in tmux, as HTML),
#                                `make docs-check` for chromium, `make fuzz` for clang and
#                                libclang-rt-14-dev, `make CC=clang test` for clang
#                                and libomp-dev (clang's omp.h and libomp)
#   scripts/deps.sh --list       print the package list and exit
set -eu

# build-essential: the compiler and make; libopenblas-openmp-dev: the OpenMP
# build of OpenBLAS, which shares our OpenMP threads (the default pthreads build
# fights them for the cores); ncurses-term: the descriptions of more terminal
# types, xterm-direct's (true colour) among them; bubblewrap: the box a
# student's code is compiled and run in when an exercise is graded; unzip: a
# class's submissions handed in as .zip files; the rest are
# the libraries and tools the README lists.
PACKAGES="build-essential pkg-config libncurses-dev ncurses-term libcunit1-dev doxygen graphviz libstb-dev
libcjson-dev libopenblas-dev libopenblas-openmp-dev libjs-mathjax tmux zlib1g-dev dataset-fashion-mnist
bubblewrap unzip"

if [ "${1:-}" = "--list" ]; then
    echo $PACKAGES
    exit 0
fi
PACKAGES="$PACKAGES $*"

# One dpkg-query for all of them, a line "PACKAGE STATUS" each (one it does not
# know is left out); STATUS ends "ok installed" for a package fully installed.
# (Every make test and make exercise asks: one query a package took 0.5 s.)
NL='
'
# shellcheck disable=SC2086 # the names are words
known=$(dpkg-query -W -f='${Package} ${Status}\n' $PACKAGES 2>/dev/null || true)
missing=""
for p in $PACKAGES; do
    case "$NL$known$NL" in
        *"$NL$p install ok installed$NL"* | *"$NL$p hold ok installed$NL"*) ;;
        *"$NL$p deinstall ok installed$NL"*) ;;
        *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0

echo "deps: installing missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
    SUDO="sudo" # may ask for a password on the terminal
else
    echo "deps: not root and sudo is not available; please run as root:" >&2
    echo "    apt-get update && apt-get install -y$missing" >&2
    exit 1
fi

# sudo drops most of the environment: pass DEBIAN_FRONTEND through env
APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -q -y"
# a fresh image has no package lists: fetch them first; otherwise only on a failed install
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ]; then
    $APT update >/dev/null
fi
if ! $APT install --no-install-recommends $missing >/dev/null 2>&1; then
    $APT update >/dev/null
    $APT install --no-install-recommends $missing
fi
echo "deps: done"
