#!/bin/sh
# make test: lib's include graph has no edge pointing up.
#
# lib/ is a folder per layer, in the order the book teaches them (LAYERS below,
# the one place the order is written). A file of lib may include a header of its
# own folder or of a folder below it, never one above: each layer can be read,
# tested and swapped knowing only the layers under it. Every include of lib is
# written relative to lib/ with its folder ("base/tensor.h"), so the folder of
# each edge is in its text: an include without a folder, with "..", or of a
# folder that is not a layer fails too (no include path that hides a layer).
# The tree's README and the Modules page follow the same order: lib/README.md's
# numbered list and docs/modules.dox's layer groups (lib_base, lib_gemm, ...)
# must name the layers in this order, one per folder.
#
# Usage: scripts/include-layers.sh [LIB_DIR [MODULES_DOX]]
#   (defaults lib and docs/modules.dox)
# Prints "lib: N files, M includes in L layers, no upward edge", or each
# offending file and include ("lib/ops/ops.c:12: includes model/vit.h: ops may
# only include ops and the layers below it: base gemm") and exits 1; exits 2
# when LIB_DIR is missing.
set -eu

# lowest first: a layer may include its own folder and the ones before it
LAYERS="base gemm ops attention io model backward train explain teach"

LIB=${1:-lib}
MODULES=${2:-docs/modules.dox}
[ -d "$LIB" ] || { printf 'include-layers: no folder %s\n' "$LIB" >&2; exit 2; }

status=0
# files directly in lib/, or folders that are no layer
for f in "$LIB"/*; do
    name=${f##*/}
    if [ -d "$f" ]; then
        case " $LAYERS " in *" $name "*) ;; *)
            printf 'include-layers: %s/ is not a layer (scripts/include-layers.sh lists them: %s)\n' \
                "$f" "$LAYERS" >&2
            status=1
        esac
    elif [ "$name" != README.md ]; then
        printf 'include-layers: %s is outside the layer folders: move it into one of %s\n' "$f" "$LAYERS" >&2
        status=1
    fi
done

# "file:line: header" for every #include "..." of lib's sources
find "$LIB" -mindepth 2 -name '*.[ch]' | LC_ALL=C sort | while read -r f; do
    awk -v file="$f" '
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
            print file ":" FNR ": " h
        }' "$f"
done | awk -v layers="$LAYERS" -v lib="$LIB" -v files="$(find "$LIB" -mindepth 2 -name '*.[ch]' | wc -l)" '
    BEGIN { n = split(layers, L, " "); for (i = 1; i <= n; i++) rank[L[i]] = i }
    {
        where = $1; sub(/:$/, "", where)
        file = where; sub(/:[0-9]+$/, "", file)
        includes++
        own = substr(file, length(lib) + 2); sub(/\/.*/, "", own)
        h = $2
        dir = h; if (sub(/\/.*/, "", dir) == 0) dir = ""
        if (dir == "" || h ~ /(^|\/)\.\.?\//) {
            printf "%s: includes \"%s\": write it relative to lib/ with its folder, e.g. \"base/tensor.h\"\n",
                where, h > "/dev/stderr"; bad++; next
        }
        if (!(dir in rank)) {
            printf "%s: includes \"%s\": %s is not a layer of lib (%s)\n", where, h, dir, layers > "/dev/stderr"
            bad++; next
        }
        if (rank[dir] > rank[own]) {
            below = ""
            for (i = 1; i < rank[own]; i++) below = below " " L[i]
            printf "%s: includes \"%s\", an upward edge: %s may only include %s and the layers below it:%s\n",
                where, h, own, own, (below == "" ? " none" : below) > "/dev/stderr"
            bad++
        }
    }
    END {
        if (bad) {
            printf "lib: %d upward or unlayered include%s (layers, lowest first: %s)\n",
                bad, bad == 1 ? "" : "s", layers > "/dev/stderr"
            exit 1
        }
        printf "lib: %d files, %d includes in %d layers, no upward edge\n", files, includes, n
    }' || status=1

# lib/README.md, the tree's reading order, lists them in this order ("1. `base/`: ...")
if [ -f "$LIB/README.md" ]; then
    found=$(sed -n 's/^[0-9]*\. `\([a-z]*\)\/`.*/\1/p' "$LIB/README.md" | tr '\n' ' ' | sed 's/ $//')
    if [ "$found" != "$LAYERS" ]; then
        printf 'include-layers: %s lists the layers as "%s", not in the order "%s"\n' \
            "$LIB/README.md" "$found" "$LAYERS" >&2
        status=1
    fi
fi

# the Modules page lists the layers in the same order
if [ -f "$MODULES" ]; then
    found=$(sed -n 's/^\/\*\* *@defgroup lib_\([a-z]*\) .*/\1/p' "$MODULES" | tr '\n' ' ' | sed 's/ $//')
    if [ "$found" != "$LAYERS" ]; then
        printf 'include-layers: %s lists the layer groups as "%s", not in the layers'"'"' order "%s"\n' \
            "$MODULES" "$found" "$LAYERS" >&2
        status=1
    fi
fi
exit "$status"
