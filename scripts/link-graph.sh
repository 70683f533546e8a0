#!/bin/sh
# make test: lib's link graph has no cycle.
#
# Reads the symbols of lib's objects (nm), draws an arrow from a file to each
# other file whose symbols it uses (shards -> backward: train/shards.o calls
# vit_forward_backward(), which backward/backward.o defines; files are named
# by their base name, unique in lib), and fails when the arrows
# make a cycle, naming its files in order (a -> b -> a). Without a cycle lib
# reads in layers: each file can be understood, tested and swapped knowing
# only the files it points to, never the ones that point at it.
#
# Usage: scripts/link-graph.sh [OBJECT.o ... | DIR]
#   the objects to read (make test names lib's, so a stale object of a file
#   deleted since is not read), or every *.o of DIR's layer folders (DIR/*/*.o,
#   default build/lib)
# Prints "lib: N objects, M edges between files, no cycle", or each cycle
# found (one per arrow that closes one) and exits 1; exits 2 when there are
# no objects or nm is missing.
set -eu

fail() { printf 'link-graph: %s\n' "$*" >&2; exit 2; }

command -v nm >/dev/null 2>&1 || fail "no nm on the PATH (Debian's binutils)"
if [ $# -le 1 ] && [ -d "${1:-build/lib}" ]; then
    DIR=${1:-build/lib}
    set -- "$DIR"/*/*.o
fi
for o in "$@"; do [ -f "$o" ] || fail "no object $o: build lib first (make lib)"; done

# nm -P -g -A: one line per external symbol, "path/file.o: name type [value
# size]"; type U is used in that file and defined elsewhere, any other letter
# is defined there.
nm -P -g -A "$@" | awk -v objects=$# '
{
    file = $1
    sub(/^.*\//, "", file)
    sub(/\.o:$/, "", file)
    if (!(file in seen)) { seen[file] = 1; files[++nfiles] = file }
}
$3 == "U" { uses[file, ++nuses[file]] = $2; next }
          { if (!($2 in owner)) owner[$2] = file }

END {
    # the arrows: file -> the files that define what it uses, each pair once
    edges = 0
    for (i = 1; i <= nfiles; i++) {
        f = files[i]
        for (u = 1; u <= nuses[f]; u++) {
            s = uses[f, u]
            if (!(s in owner) || owner[s] == f || ((f, owner[s]) in edge)) continue
            edge[f, owner[s]] = 1
            out[f, ++nout[f]] = owner[s]
            edges++
        }
    }
    # depth-first, every file once: an arrow back to a file still on the path
    # (colour 1) closes a cycle, which is the path from that file on
    cycles = 0
    for (i = 1; i <= nfiles; i++) if (!colour[files[i]]) visit(files[i], 0)
    if (cycles) {
        printf "lib: %d objects, %d edges between files, %d cycle%s (a -> b: a uses a " \
               "symbol b defines)\n", objects, edges, cycles, cycles == 1 ? "" : "s" > "/dev/stderr"
        for (c = 1; c <= cycles; c++) printf "  cycle: %s\n", cycle[c] > "/dev/stderr"
        exit 1
    }
    printf "lib: %d objects, %d edges between files, no cycle\n", objects, edges
}

function visit(f, depth,    j, t, k, line) {
    colour[f] = 1
    path[depth] = f
    for (j = 1; j <= nout[f]; j++) {
        t = out[f, j]
        if (colour[t] == 1) {
            for (k = depth; path[k] != t; k--) ;
            line = t
            for (k++; k <= depth; k++) line = line " -> " path[k]
            cycle[++cycles] = line " -> " t
        } else if (!colour[t]) visit(t, depth + 1)
    }
    colour[f] = 2
}
'
