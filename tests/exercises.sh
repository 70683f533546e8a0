#!/bin/sh
# Classroom exercises: build a student's functions into the test runner and
# grade them with the exercise's answer key. Called by the Makefile, which
# passes the compiler, the flags and the runner's objects in the environment:
#
#   make exercise CH=NN [DIR=path] [FORMAT=json] [JSON=path] [TIMEOUT=s]
#        -> tests/exercises.sh grade NN [DIR]
#        (SANITIZE=1: the same, the Makefile passing build/sanitize's flags)
#   make exercise                -> tests/exercises.sh list
#   make exercise-all [DIR=path] -> tests/exercises.sh all [DIR]
#   make test (exercise-checks)  -> tests/exercises.sh check-key NN_name
#                                   tests/exercises.sh check-skeleton NN_name
#                                   tests/exercises.sh check-wrong tests/wrong/NN_name/FILE.c
#                                   tests/exercises.sh check-wrong tests/grader/FILE.c
#                                   tests/exercises.sh check-quoting NN_name
#   make stage-checks            -> tests/exercises.sh check-stage tests/wrong/NN_name/FILE.c
#
# How a student's code is graded: each of their .c files is compiled (in the
# box, below) with the project's flags (less -Werror, -O2 for -O3: the Makefile's
# EX_CFLAGS) and linked with exactly
# the objects of the normal runner (build/tests/run) and lib's archive
# without the files the exercise hands out, so a function the student did
# not write is a link error, never lib's. The answer key is the list of
# suites/tests in exercises/NN_name/KEY. The normal runner grades it
# (`--grade`, tests/grade.h), outside the box: it runs each test twice, each
# time in a process of its own, with lib's code and (boxed) with the
# student's runner, each writing down its checks, and judges the student's
# record against lib's (tests/verdict.h). A compile or link error is the
# result (score 0, the compiler's messages).
#
# Files: BUILD/exercises/NN/ (EX_WORK/NN) holds the objects (obj/), the linked runner
# (tests/run, to re-run one test by hand), build.log, output.txt (what the
# grader printed), score (the last result) and results.json (FORMAT=json).
# The make test checks work in BUILD/exercises/check/, one folder per case,
# so they run in parallel (make -j) and never touch a student's last score.
#
# Environment (from the Makefile): BUILD, EX_CC, EX_CFLAGS, EX_OBJS (the
# runner's objects but lib), EX_LIB (libvit.a), EX_LIBS (-lcunit and the
# libraries), EX_RUNNER (the normal runner); EX_FORMAT (json or empty),
# EX_JSON (a path), EX_TIMEOUT (seconds a test may take, empty: the runner's 30);
# EX_CH and EX_DIR, make's CH and DIR, which the Makefile passes as arguments
# ("$EX_DIR": the values travel in the environment, never as shell text).
# EX_WORK (default BUILD/exercises): where grading writes, set by check-quoting
# so that its make exercise leaves a student's last score alone.
set -eu

case $0 in */*) ROOT=${0%/*}/.. ;; *) ROOT=.. ;; esac
ROOT=$(cd "$ROOT" && pwd)
BOX_SOURCE="" BOX_HIDE="" # the student's folder and the one to hide (boxed(), below)
cd "$ROOT" # BUILD and the objects are named from here, as make names them
: "${BUILD:=build}"
: "${EX_CC:=cc}" "${EX_CFLAGS:=}" "${EX_OBJS:=}" "${EX_LIB:=$BUILD/libvit.a}" "${EX_LIBS:=}"
# The student's own files get one flag more: every local variable they forget to
# set starts as the same pattern of bytes (gcc: a float of about -1.7e38;
# clang: NaN), never as what the stack held before, so code that reads one
# fails the same way, with the same score, every time it is graded.
: "${EX_STUDENT_CFLAGS=-ftrivial-auto-var-init=pattern}"
: "${EX_RUNNER:=$BUILD/tests/run}" "${EX_FORMAT:=}" "${EX_JSON:=}" "${EX_TIMEOUT:=}"
: "${EX_WORK:=$BUILD/exercises}"

say() { printf '%s\n' "$*"; }
NL='
' TAB=$(printf '\t') CR=$(printf '\r')
BLANKS=" $TAB$CR"
die() { printf 'exercise: %s\n' "$*" >&2; exit 2; }

# lib_source FILE.c: into LIB_SOURCE, lib's file of that name, in whichever
# layer folder holds it (lib/ops/softmax.c for softmax.c: a student's file
# keeps its plain name, and base names are unique in lib); empty when lib has
# none. lib_object FILE.c: into LIB_OBJECT, the object this build made of it.
# (Variables, not printed: make test asks for some 500 objects, and a $(...)
# is a process each.) lib_file FILE.c prints the source.
lib_source() {
    LIB_SOURCE=""
    for l_f in "$ROOT"/lib/*/"$1"; do
        [ -f "$l_f" ] && LIB_SOURCE=$l_f && return 0
    done
    return 0
}
lib_object() {
    lib_source "$1"
    LIB_OBJECT=""
    [ -n "$LIB_SOURCE" ] || return 0
    l_obj=$BUILD/${LIB_SOURCE#"$ROOT"/}
    LIB_OBJECT=${l_obj%.c}.o
}
lib_file() {
    lib_source "$1"
    [ -z "$LIB_SOURCE" ] || printf '%s\n' "$LIB_SOURCE"
}

# An absolute path for one given relative to where make was run (the root).
absolute() {
    case $1 in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s/%s\n' "$ROOT" "$1" ;;
    esac
}

# A path as the user would write it: relative to the root when inside it.
shorter() {
    case $1 in
        "$ROOT"/*) printf '%s\n' "${1#"$ROOT"/}" ;;
        *) printf '%s\n' "$1" ;;
    esac
}

# The exercises there are: exercises/NN_name, one per line (none: nothing).
exercise_names() {
    for d in "$ROOT"/exercises/[0-9][0-9]_*/; do
        [ -d "$d" ] || continue
        d=${d%/}
        printf '%s\n' "${d##*/}"
    done
}

# exercise_named CH: into EXERCISE, the NN_name of the exercise CH names: 3,
# 03, 03_softmax or softmax; returns 1 when none (a variable: no process).
exercise_named() {
    EXERCISE="" e_want=$1
    case $e_want in
        [0-9]) e_want=0$e_want ;;
    esac
    for e_dir in "$ROOT"/exercises/[0-9][0-9]_*/; do
        [ -d "$e_dir" ] || continue
        e_dir=${e_dir%/}
        e_dir=${e_dir##*/}
        case $e_want in
            "$e_dir" | "${e_dir%%_*}" | "${e_dir#*_}") EXERCISE=$e_dir && return 0 ;;
        esac
    done
    return 1
}

# The same, printed.
find_exercise() { exercise_named "$1" && printf '%s\n' "$EXERCISE"; }

# The exercise's title: the first '#' heading of its README.md.
exercise_title() {
    readme=$ROOT/exercises/$1/README.md
    [ -f "$readme" ] || return 0
    sed -n 's/^#[#]* *//p' "$readme" | head -n 1
}

# "untouched", "edited" or "new" (not in git's last commit) for a folder; "" without git.
git_state() {
    command -v git >/dev/null 2>&1 || return 0
    git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || return 0
    if [ -z "$(git -C "$ROOT" ls-tree HEAD -- "$1" 2>/dev/null)" ]; then
        say new
    elif [ -n "$(git -C "$ROOT" --no-optional-locks status --porcelain -- "$1" 2>/dev/null)" ]; then
        say edited
    else
        say untouched
    fi
}

# ------------------------------------------------------------------ the box
#
# A student's code is compiled, linked and run inside a box (bubblewrap, which
# scripts/deps.sh installs): new namespaces for everything (no network, its own
# processes, its own /tmp), the whole file system read-only but the grade's own
# work folder, home folders and the folder of the other submissions hidden, no
# privileges; and within it, limits (prlimit) on memory, CPU time, processes
# and file size. When the box ends, so does every process started inside it
# (the PID namespace dies with its first process): a setsid() child included.
# A machine whose kernel refuses namespaces (some containers) gets the limits
# alone, and every grade says so in one line: never unboxed in silence.
#
# Settings (environment): EX_BOX=0 turns the box off (said in every grade);
# EX_MEMORY (default 8G: address space, not under the sanitizers, whose
# shadow memory needs terabytes of it), EX_CPU (seconds of CPU time per
# process, default 900), EX_PROCS (default 256), EX_FILE_SIZE (default 64M).
: "${EX_BOX:=1}" "${EX_MEMORY:=8G}" "${EX_CPU:=900}" "${EX_PROCS:=256}" "${EX_FILE_SIZE:=64M}"

# Whether bubblewrap can make a box here; why not into BOX_WHY. A box that
# worked is remembered until the machine starts again (BUILD/exercises/box-works
# holds the kernel's boot id): make test asks 270 times, and each try starts two
# programs. A box that did not work is tried again the next time.
BOX_WHY="" BOX_CHECKED=""
box_works() {
    if [ -z "$BOX_CHECKED" ]; then
        BOX_CHECKED=yes
        b_boot="" b_kept=""
        b_file=$BUILD/exercises/box-works
        [ ! -r /proc/sys/kernel/random/boot_id ] || read -r b_boot </proc/sys/kernel/random/boot_id || :
        [ ! -f "$b_file" ] || read -r b_kept <"$b_file" || :
        if [ "$EX_BOX" = 0 ]; then
            BOX_WHY="EX_BOX=0"
        elif ! command -v bwrap >/dev/null 2>&1; then
            BOX_WHY="bubblewrap (bwrap) is not installed: scripts/deps.sh installs it"
        elif [ -n "$b_boot" ] && [ "$b_kept" = "$b_boot" ]; then
            : # it worked since the machine started
        elif ! b_err=$(bwrap --unshare-all --die-with-parent --ro-bind / / true 2>&1); then
            BOX_WHY="this kernel refuses the namespaces bubblewrap needs (${b_err:-no reason given})"
        elif [ -n "$b_boot" ] && mkdir -p "${b_file%/*}" 2>/dev/null; then
            printf '%s\n' "$b_boot" >"$b_file.$$" 2>/dev/null && mv -f "$b_file.$$" "$b_file" 2>/dev/null ||
                rm -f "$b_file.$$"
        fi
    fi
    [ -z "$BOX_WHY" ]
}

# The line every grade carries about the box.
box_note() {
    if box_works; then
        say "boxed: no network, the file system read-only, other submissions, other grades, lib's runner and home folders hidden, the verdict made outside; limits: memory $EX_MEMORY, CPU ${EX_CPU} s a process, $EX_PROCS processes, files of $EX_FILE_SIZE"
    else
        say "NOT BOXED: $BOX_WHY; only limits hold (memory $EX_MEMORY, CPU ${EX_CPU} s a process, $EX_PROCS processes, files of $EX_FILE_SIZE): grade only code you trust"
    fi
}

# "8G", "64M", "512K" or a number of bytes, in bytes (prlimit takes bytes).
bytes() {
    case $1 in
        *[Gg]) echo $((${1%?} * 1024 * 1024 * 1024)) ;;
        *[Mm]) echo $((${1%?} * 1024 * 1024)) ;;
        *[Kk]) echo $((${1%?} * 1024)) ;;
        *) echo "$1" ;;
    esac
}

# (worked out once, not in each box: a subshell costs 2 ms on a busy 2-core machine)
BOX_MEMORY_BYTES=$(bytes "$EX_MEMORY") BOX_FILE_BYTES=$(bytes "$EX_FILE_SIZE")
BUILD_ABS=$(cd "$BUILD" 2>/dev/null && pwd) || BUILD_ABS=$ROOT/$BUILD

# boxed WORK CMD...: run CMD in the box. WORK is the one folder it may write;
# BOX_SOURCE (a global: the student's folder) stays visible, read-only, and
# BOX_HIDE (a global: the folder of all the submissions, or "") is hidden.
# With BOX_OUTER=N (a global) the first N words of CMD run outside the box and
# are given the rest, boxed, as their last arguments: that is how the grader,
# which never runs a student's code, runs each test of it (graded()). Then the
# student's code writes nothing at all, WORK included, and sees neither the
# build folder (lib's runner, lib's records of the tests, the other grades) nor
# the class's grades (CLASS_OUT): only WORK, read-only, the vit programs and
# the matrix product's timing.
boxed() {
    case $1 in # bubblewrap binds absolute paths (this script runs in ROOT)
        /*) x_work=$1 ;;
        *) x_work=$ROOT/$1 ;;
    esac
    shift
    x_outer=${BOX_OUTER:-0}
    x_i=0 # the outer words to the end for now: the box goes in front of the rest
    while [ "$x_i" -lt "$x_outer" ]; do set -- "$@" "$1"; shift; x_i=$((x_i + 1)); done
    x_as=""
    case " $EX_CFLAGS " in *" -fsanitize="*) ;; *) x_as=--as=$BOX_MEMORY_BYTES ;; esac
    set -- prlimit --cpu="$EX_CPU" --nproc="$EX_PROCS" --fsize="$BOX_FILE_BYTES" \
        ${x_as:+"$x_as"} -- "$@"
    if box_works; then
        # bubblewrap's arguments, put in front of the command last first: hide, then show again
        set -- --chdir "$ROOT" -- "$@"
        if [ "$x_outer" -gt 0 ]; then
            # (in the order bubblewrap takes them: hide, show again, then make it all read-only)
            x_build=$BUILD_ABS
            x_class=""
            [ -z "${CLASS_OUT:-}" ] || [ ! -d "$CLASS_OUT" ] || x_class=$CLASS_OUT
            set -- --remount-ro "$x_build" "$@"
            [ -z "$x_class" ] || set -- --remount-ro "$x_class" "$@"
            # the programs the command-line tests start (vit, vitview, the chapters), the product's
            # timing (tests/gemm-choice, which the grader's runner names in the
            # environment: without it each test would time the product again)
            for x_p in vitview vit chapters tests/gemm-choice; do
                [ ! -e "$x_build/$x_p" ] || set -- --ro-bind "$x_build/$x_p" "$x_build/$x_p" "$@"
            done
            set -- --ro-bind "$x_work" "$x_work" "$@"
            [ -z "$x_class" ] || set -- --tmpfs "$x_class" "$@"
            set -- --tmpfs "$x_build" "$@"
        else
            set -- --bind "$x_work" "$x_work" "$@"
        fi
        [ -z "${BOX_SOURCE:-}" ] || set -- --ro-bind "$BOX_SOURCE" "$BOX_SOURCE" "$@"
        [ -z "${BOX_HIDE:-}" ] || [ ! -d "$BOX_HIDE" ] || set -- --tmpfs "$BOX_HIDE" "$@"
        set -- --ro-bind "$ROOT" "$ROOT" "$@" # the checkout, if it was in a hidden folder
        [ ! -f /etc/shadow ] || set -- --ro-bind /dev/null /etc/shadow "$@"
        for x_dir in /home /root /mnt /media /srv; do
            [ ! -d "$x_dir" ] || set -- --tmpfs "$x_dir" "$@"
        done
        set -- bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --dev /dev \
            --proc /proc --tmpfs /tmp --tmpfs /dev/shm "$@"
    fi
    x_i=0 x_n=$(($# - x_outer)) # and the outer words back in front
    while [ "$x_i" -lt "$x_n" ]; do set -- "$@" "$1"; shift; x_i=$((x_i + 1)); done
    "$@"
}

# graded WORK RUNNER ARG...: grade the student's RUNNER (built in WORK) with
# the grader's ARGs. The grader is lib's runner, outside the box: it runs each
# test twice, with lib's code and, boxed, with RUNNER, each writing down its
# checks, and judges the student's checks against lib's itself
# (tests/verdict.h): nothing the student's code does in its own process can
# make a failure pass. lib's records are kept in BUILD/exercises/records.
graded() {
    d_work=$1 d_runner=$2
    shift 2
    set -- "$EX_RUNNER" --grade --records "$BUILD/exercises/records" "$@" --student "$d_runner"
    BOX_OUTER=$(($# - 1)) # (not as a prefix: sh keeps a function's prefix assignments)
    d_status=0
    boxed "$d_work" "$@" || d_status=$?
    BOX_OUTER=0
    return "$d_status"
}

# The folder to hide for a student's folder SRC: the one holding it and its
# neighbours (the other submissions), unless that holds the checkout or the
# build folder too.
hide_for() {
    h_parent=$(dirname "$1")
    case "$ROOT/" in "$h_parent"/*) return 0 ;; esac
    case "$(cd "$BUILD" && pwd)/" in "$h_parent"/*) return 0 ;; esac # the grade's own tree
    [ "$h_parent" = / ] || printf '%s\n' "$h_parent"
}

# global_functions strong|weak OBJ...: the functions the objects define for
# other files to call, one name a line: FUNC, or IFUNC (one compiled per CPU
# with target_clones, e.g. softmax), the weak ones too with "weak". readelf,
# not nm: binutils' nm first loads every plugin in /usr/lib/bfd-plugins, and
# clang's brings all of LLVM (0.1 s of CPU a call, against 0.01 s; make test
# asks once for each of its 218 wrong files).
global_functions() {
    g_bind=GLOBAL
    [ "$1" != weak ] || g_bind='GLOBAL|WEAK'
    shift
    readelf -Ws "$@" 2>/dev/null |
        awk -v bind="^($g_bind)\$" '$4 ~ /^I?FUNC$/ && $5 ~ bind && $7 != "UND" { print $8 }'
}

# handed_out NAME: into HANDED_OUT, the file listing the functions exercise
# NAME hands out, one "function file.c" per line: the global functions of each
# lib file its skeleton's files replace (lib/ops/softmax.c's for softmax.c). A
# student's files must define every one of them. Listed once per build of lib,
# like lib_without's archive (BUILD/exercises/lib/NAME.functions): make test
# asks it for each of its 218 wrong files.
handed_out() {
    h_out=$BUILD/exercises/lib/$1.functions
    if [ ! -f "$h_out" ] || [ "$EX_LIB" -nt "$h_out" ]; then
        mkdir -p "$BUILD/exercises/lib"
        h_tmp=$h_out.tmp.$$
        for h_src in "$ROOT/exercises/$1"/*.c; do
            h_base=${h_src##*/}
            lib_object "$h_base"
            h_obj=$LIB_OBJECT
            if [ -z "$h_obj" ] || [ ! -f "$h_obj" ]; then continue; fi
            global_functions strong "$h_obj" | awk -v file="$h_base" '{ print $1, file }'
        done >"$h_tmp"
        mv "$h_tmp" "$h_out"
    fi
    HANDED_OUT=$h_out
}

# missing_functions NAME OBJ...: says in the build log which handed-out function
# the objects do not define; returns 1 if any. Without this check the runner
# would take the function from lib, and a renamed softmax() would score full marks.
missing_functions() {
    m_name=$1
    shift
    # lib's own objects (a wrong file's exercise-mates) define what handed_out()
    # lists for their files, read from those very objects: only the others are read
    m_own="" m_lib_files=" "
    for m_obj in "$@"; do
        case $m_obj in
            "$BUILD"/lib/*.o) m_f=${m_obj##*/} && m_lib_files="$m_lib_files${m_f%.o}.c " ;;
            *) m_own="$m_own $m_obj" ;;
        esac
    done
    m_defined=""
    # shellcheck disable=SC2086 # the objects are words (no spaces: build_runner())
    [ -z "$m_own" ] || m_defined=$(global_functions weak $m_own)
    m_missing=0
    handed_out "$m_name"
    while read -r m_fn m_file; do
        [ -n "$m_fn" ] || continue
        case "$NL$m_defined$NL" in *"$NL$m_fn$NL"*) continue ;; esac
        case $m_lib_files in *" $m_file "*) continue ;; esac
        say "error: $m_fn() is not defined in your files: did you rename it? (exercises/$m_name/$m_file hands it out; write it there, with that name)"
        m_missing=1
    done <"$HANDED_OUT"
    return "$m_missing"
}

# lib_without NAME: into LIB_WITHOUT, the path of lib's archive without the
# members exercise NAME hands out, made once per build of lib
# (BUILD/exercises/lib/NAME.a; in a folder of its own first, then renamed:
# graders running side by side each make a whole one).
lib_without() {
    l_out=$BUILD/exercises/lib/$1.a
    if [ ! -f "$l_out" ] || [ "$EX_LIB" -nt "$l_out" ]; then
        mkdir -p "$BUILD/exercises/lib"
        l_tmp=$l_out.tmp.$$
        cp "$EX_LIB" "$l_tmp"
        for l_src in "$ROOT/exercises/$1"/*.c; do
            l_member=${l_src##*/}
            ar d "$l_tmp" "${l_member%.c}.o"
        done
        mv "$l_tmp" "$l_out"
    fi
    LIB_WITHOUT=$l_out
}

# build_runner WORK NAME FILE.c...: compile the files into WORK/obj (a FILE.o is
# taken as it is) and link
# WORK/tests/run with the runner's objects and lib; the compiler's messages go
# to WORK/build.log. NAME is the exercise (empty for the grader's own checks):
# every function it hands out must be defined in the files, and lib is linked
# without the files that define them, so nothing the student did not write is
# taken from lib. Returns 1 when something did not compile or link.
# (sh has no local variables: this one's names start with b_.)
build_runner() {
    b_work=$1 b_name=$2
    shift 2
    [ ! -e "$b_work/obj" ] && [ ! -e "$b_work/tests" ] || rm -rf "$b_work/obj" "$b_work/tests"
    mkdir -p "$b_work/obj" "$b_work/tests"
    : >"$b_work/build.log"
    b_ok=0 b_objs=""
    set -f # the flags are split into words, never globbed (and the paths hold no spaces)
    for b_src in "$@"; do
        case $b_src in # an object already made (lib's own, beside a wrong file) is linked as it is
            *.o) b_objs="$b_objs $b_src" && continue ;;
        esac
        b_base=${b_src##*/}
        case $b_base in # an object name without spaces
            *" "*) b_base=$(printf %s "$b_base" | tr " " _) ;;
        esac
        b_objs="$b_objs $b_work/obj/${b_base%.c}.o"
        # shellcheck disable=SC2086 # the flags are words
        boxed "$b_work" $EX_CC $EX_CFLAGS $EX_STUDENT_CFLAGS -c "$b_src" -o "$b_work/obj/${b_base%.c}.o" \
            >>"$b_work/build.log" 2>&1 ||
            b_ok=1
    done
    set +f
    [ "$b_ok" -eq 0 ] || return 1
    b_lib=$EX_LIB
    if [ -n "$b_name" ]; then
        # shellcheck disable=SC2086 # the objects are words (no spaces, as above)
        missing_functions "$b_name" $b_objs >>"$b_work/build.log" || return 1
        lib_without "$b_name"
        b_lib=$LIB_WITHOUT
    fi
    set -f
    # shellcheck disable=SC2086
    boxed "$b_work" $EX_CC $EX_CFLAGS $b_objs $EX_OBJS "$b_lib" $EX_LIBS ${B_LDFLAGS:-} -o "$b_work/tests/run" \
        >>"$b_work/build.log" 2>&1 || b_ok=1
    set +f
    if [ "$b_ok" -ne 0 ]; then
        if grep -q 'multiple definition' "$b_work/build.log"; then
            say "note: a function is defined twice, in these files and in the lib file that" \
                "defines it too. A file replaces a lib file whole: write every function of the" \
                "lib/*/*.c file of the same name, and no main()." >>"$b_work/build.log"
        fi
        return 1
    fi
    # the runner finds the vit programs beside its folder (tests/cli_run.c)
    ln -sfn "$BUILD_ABS/vit" "$BUILD_ABS/vitview" "$BUILD_ABS/chapters" "$b_work/"
    return 0
}

# The score line of a grader's output file: "N M", or nothing.
score_of() {
    sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$1" | tail -n 1
}

# The tests exercise NAME's untouched skeleton passes, one "SUITE/TEST" a
# line, into BUILD/exercises/baseline/NN/passing.txt (its path is printed; it
# is empty when the skeleton does not build). Made again when the runner, the
# key or the exercise's folder is newer. The skeleton is the committed one
# when git has it, so a student solving it in place is not its baseline.
skeleton_baseline() {
    k_name=$1
    k_dir=$BUILD/exercises/baseline/${k_name%%_*}
    k_out=$k_dir/passing.txt
    if [ -f "$k_out" ] && [ -z "$(find "$EX_RUNNER" "$ROOT/exercises/$k_name" -newer "$k_out" 2>/dev/null | head -n 1)" ]; then
        printf '%s\n' "$k_out"
        return 0
    fi
    # made in a folder of this process's own, then renamed into place: two grades
    # at once (make -j, a class) each make it, and neither sees half of the other's
    k_tmp=$k_dir.tmp.$$
    rm -rf "$k_tmp"
    mkdir -p "$k_tmp/src" "$k_dir"
    for k_f in "$ROOT/exercises/$k_name"/*.c; do
        k_rel=exercises/$k_name/${k_f##*/}
        git -C "$ROOT" show "HEAD:$k_rel" >"$k_tmp/src/${k_f##*/}" 2>/dev/null || cp "$k_f" "$k_tmp/src/"
    done
    : >"$k_tmp/passing.txt"
    if BOX_SOURCE="" BOX_HIDE="" build_runner "$k_tmp" "$k_name" "$k_tmp/src"/*.c; then
        # on one thread, as check-skeleton makes the README's table: what an untouched
        # skeleton happens to pass (its buffers never written) may depend on the threads
        (export OMP_NUM_THREADS=1; graded "$k_tmp" "$k_tmp/tests/run" --key "$ROOT/exercises/$k_name/KEY") \
            >"$k_tmp/output.txt" 2>&1 || true
        sed -n 's/^PASS  //p' "$k_tmp/output.txt" | sed 's/  (.*$//' >"$k_tmp/passing.txt"
    fi
    cp "$k_tmp/output.txt" "$k_dir/output.txt" 2>/dev/null || true
    mv "$k_tmp/passing.txt" "$k_out"
    rm -rf "$k_tmp"
    printf '%s\n' "$k_out"
}

# grade_one NAME SRCDIR QUIET: grade the .c files of SRCDIR with exercises/NAME/KEY.
# The grader's exit status; its output is in EX_WORK/NN/output.txt
# (and on the terminal unless QUIET is 1).
grade_one() {
    name=$1 src=$2 quiet=$3
    nn=${name%%_*}
    key=$ROOT/exercises/$name/KEY
    work=$EX_WORK/$nn
    [ -f "$key" ] || die "exercises/$name has no KEY file (the suites of its answer key)"
    mkdir -p "$work"
    ls "$src"/*.c >/dev/null 2>&1 || die "$src holds no .c file to grade"
    json=""
    case $EX_FORMAT in
        json) json=${EX_JSON:-$work/results.json} ;;
        "" | text) [ -z "$EX_JSON" ] || json=$EX_JSON ;;
        *) die "FORMAT=$EX_FORMAT: the formats are json (results.json for Gradescope) and text" ;;
    esac
    if [ -n "$json" ]; then # as lib's outputs (base/fileio.h), checked before any work:
        # a link is followed to its target, and a link to nothing refused
        if [ -L "$json" ]; then
            [ -e "$json" ] || die "JSON=$json is a symbolic link to a file that does not exist"
            json=$(readlink -f -- "$json")
        fi
        # never over what is not a regular file (/dev/null), nor over a file graded
        [ ! -e "$json" ] || [ -f "$json" ] ||
            die "JSON=$json is not a regular file: refusing to replace it"
        for f in "$src"/*.c; do
            [ ! "$json" -ef "$f" ] || die "JSON=$json is $f, a file being graded"
        done
        [ -d "$(dirname "$json")" ] || die "JSON=$json: the folder $(dirname "$json") does not exist"
    fi
    title=$(exercise_title "$name")
    set -- --key "$key" --title "${title:-exercise $name}: $(shorter "$src")"
    for f in "$src"/*.c; do set -- "$@" --source "$(shorter "$f")"; done
    # written inside the work folder by the grader (outside the box), then put in place
    [ -z "$json" ] || { rm -f "$work/results.json.new"; set -- "$@" --json "$work/results.json.new"; }
    [ -z "$EX_TIMEOUT" ] || set -- "$@" --timeout "$EX_TIMEOUT"
    [ -z "${EX_POINTS:-}" ] || set -- "$@" --points "$EX_POINTS"
    [ -z "${EX_VISIBILITY:-}" ] || set -- "$@" --visibility "$EX_VISIBILITY"
    # hidden from the code: the whole class (make grade-class), else the folder beside it
    BOX_SOURCE=$src BOX_HIDE=${CLASS_ROOT:-$(hide_for "$src")}
    baseline=$(skeleton_baseline "$name")
    [ ! -f "$baseline" ] || set -- "$@" --baseline "$baseline"
    if build_runner "$work" "$name" "$src"/*.c; then
        [ ! -s "$work/build.log" ] || set -- "$@" --build-log "$work/build.log"
        set -- graded "$work" "$work/tests/run" "$@"
    else # nothing runs: every test fails with the compiler's messages
        set -- "$EX_RUNNER" --grade "$@" --build-failed --build-log "$work/build.log"
    fi
    rm -f "$work/status"
    if [ "$quiet" = 1 ]; then
        { box_note; g_st=0; "$@" 2>&1 || g_st=$?
          echo "$g_st" >"$work/status"; } >"$work/output.txt.tmp"
    else
        { box_note; g_st=0; "$@" 2>&1 || g_st=$?
          echo "$g_st" >"$work/status"; } | tee "$work/output.txt.tmp"
    fi
    mv "$work/output.txt.tmp" "$work/output.txt"
    status=$(cat "$work/status")
    if [ -n "$json" ] && [ -f "$work/results.json.new" ]; then
        if [ "$json" -ef "$work/results.json" ] || [ "$json" = "$work/results.json" ]; then
            mv "$work/results.json.new" "$work/results.json"
        else # a temporary file beside the destination, renamed: never half a file there
            # (the mode of the file it replaces kept, as lib's outputs keep it)
            cp "$work/results.json.new" "$json.tmp.$$" &&
                { [ ! -f "$json" ] || chmod --reference="$json" "$json.tmp.$$"; } &&
                mv "$json.tmp.$$" "$json" ||
                { rm -f "$json.tmp.$$"; die "JSON=$json: cannot write it"; }
            rm -f "$work/results.json.new"
        fi
    fi
    result=$(score_of "$work/output.txt")
    if [ -n "$result" ]; then
        printf '%s\t%s\t%s\n' "$result" "$src" "$(date '+%Y-%m-%d %H:%M')" >"$work/score"
    fi
    if [ -n "$json" ] && [ "$quiet" != 1 ] && [ "$status" -le 1 ]; then
        say "results: $json"
    fi
    return "$status"
}

# Where a student's copy of exercise NAME is: DIR itself, or DIR/NAME for a copy of exercises/.
source_dir() {
    name=$1 dir=$2
    if [ -z "$dir" ]; then
        printf '%s\n' "$ROOT/exercises/$name"
    elif ls "$dir"/*.c >/dev/null 2>&1; then
        printf '%s\n' "$dir"
    elif [ -d "$dir/$name" ]; then
        printf '%s\n' "$dir/$name"
    else
        return 1
    fi
}

cmd_grade() {
    [ -n "${1:-}" ] || die "which exercise? make exercise CH=NN (make exercise lists them)"
    name=$(find_exercise "$1") || {
        say "exercise: no exercise '$1'; there are:" >&2
        exercise_names | sed 's/^/  /' >&2
        exit 2
    }
    dir=${2:-}
    if [ -n "$dir" ]; then
        dir=$(absolute "$dir")
        [ -d "$dir" ] || die "DIR=$dir is not a folder"
    fi
    src=$(source_dir "$name" "$dir") || die "$dir holds neither .c files nor a folder $name"
    [ -z "$EX_JSON" ] || EX_JSON=$(absolute "$EX_JSON")
    grade_one "$name" "$src" 0
}

cmd_list() {
    names=$(exercise_names)
    if [ -z "$names" ]; then
        say "no exercises yet (exercises/NN_name/)"
        return 0
    fi
    say "exercises (grade one: make exercise CH=NN; all: make exercise-all):"
    for name in $names; do
        nn=${name%%_*}
        state=$(git_state "exercises/$name")
        last=""
        scorefile=$EX_WORK/$nn/score
        if [ -f "$scorefile" ]; then
            IFS='	' read -r result from when <"$scorefile" || true
            passed=${result% *} failed=${result#* }
            last="last graded $when: $passed passed, $failed failed"
            [ "$from" = "$ROOT/exercises/$name" ] || last="$last (DIR=$from)"
            if [ -n "$(find "$ROOT/exercises/$name" -name '*.c' -newer "$scorefile" 2>/dev/null)" ]; then
                last="$last, edited since"
            fi
        fi
        printf '  %-22s %-10s %s\n' "$name" "${state:-?}" "${last:-not graded yet}"
        title=$(exercise_title "$name")
        [ -z "$title" ] || printf '  %-22s %s\n' "" "$title"
    done
}

cmd_all() {
    dir=${1:-}
    [ -z "$dir" ] || dir=$(absolute "$dir")
    names=$(exercise_names)
    if [ -z "$names" ]; then
        say "no exercises yet (exercises/NN_name/)"
        return 0
    fi
    total_p=0 total_f=0 worst=0
    table=""
    for name in $names; do
        nn=${name%%_*}
        if ! src=$(source_dir "$name" "$dir"); then
            table="$table$(printf '%-22s %7s %7s  %s' "$name" - - "not in $dir")
"
            worst=1
            continue
        fi
        if [ ! -f "$ROOT/exercises/$name/KEY" ] || ! ls "$src"/*.c >/dev/null 2>&1; then
            why="no KEY file"
            [ -f "$ROOT/exercises/$name/KEY" ] && why="no .c file in $(shorter "$src")"
            table="$table$(printf '%-22s %7s %7s  %s' "$name" - - "not graded: $why")
"
            worst=1
            continue
        fi
        printf 'grading %s ...\n' "$name"
        status=0
        grade_one "$name" "$src" 1 || status=$?
        result=$(score_of "$EX_WORK/$nn/output.txt")
        passed=${result% *} failed=${result#* }
        note="$EX_WORK/$nn/output.txt"
        grep -q '^the code did not compile' "$EX_WORK/$nn/output.txt" &&
            note="did not compile: $note"
        [ -n "$result" ] || { passed=- failed=- note="the grader stopped (exit $status): $note"; }
        [ "$status" -eq 0 ] || worst=1
        case $passed in [0-9]*) total_p=$((total_p + passed)) total_f=$((total_f + failed)) ;; esac
        table="$table$(printf '%-22s %7s %7s  %s' "$name" "$passed" "$failed" "$note")
"
    done
    say ""
    printf '%-22s %7s %7s  %s\n' exercise passed failed details
    printf '%s' "$table"
    printf '%-22s %7s %7s\n' all "$total_p" "$total_f"
    return "$worst"
}

# ------------------------------------------------------------------ a class

# The folder of a student's submission that holds exercise NAME's files: the
# shallowest one holding a file of the skeleton's names (an LMS download nests
# them: "Sean O'Brien_456_assignsubmission_file_/hw3/softmax.c"), else the
# shallowest holding any .c file; nothing when there is none.
submission_folder() {
    f_want=$(for f in "$ROOT/exercises/$1"/*.c; do printf '%s\n' "${f##*/}"; done)
    f_best="" f_any=""
    # shallowest first: find lists a folder's files before its subfolders' (-depth is not given)
    f_list=$(find "$2" -type f -name '*.c' 2>/dev/null | awk -F/ '{ print NF "\t" $0 }' | sort -n | cut -f 2-)
    while IFS= read -r f_c; do
        [ -n "$f_c" ] || continue
        [ -n "$f_any" ] || f_any=$(dirname "$f_c")
        if printf '%s\n' "$f_want" | grep -qxF -- "${f_c##*/}"; then
            f_best=$(dirname "$f_c")
            break
        fi
    done <<EOF_FILES
$f_list
EOF_FILES
    printf '%s\n' "${f_best:-$f_any}"
}

# A student's folder name made safe for a file name, and its checksum: "a b"
# and "a_b" stay two students.
student_id() {
    printf '%s-%s\n' "$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' _)" \
        "$(printf '%s' "$1" | cksum | cut -d ' ' -f 1)"
}

# A CSV field: in double quotes, its own double quotes doubled.
csv() { printf '"%s"' "$(printf '%s' "$1" | sed 's/"/""/g')"; }

# class-one NAME OUT STUDENT_FOLDER: grade one student of a class (run by
# cmd_class, several at once), into OUT/work/ID/ and OUT/results/ID.json; one
# gradebook row into OUT/rows/ID.csv. ID is the folder's name made safe.
# unpack ZIP DEST STUDENT: a submission's .zip into DEST (emptied first), in
# the box: the student's folder read-only, the rest of the class hidden, files
# of at most EX_FILE_SIZE, at most 1000 entries and 60 s. unzip itself refuses
# a path with ".." and drops a leading "/". Returns 1 when it cannot.
unpack() {
    rm -rf "$2"
    mkdir -p "$2"
    [ "$(unzip -Z1 "$1" 2>/dev/null | wc -l)" -le 1000 ] || return 1
    BOX_SOURCE=$3
    BOX_HIDE=${CLASS_ROOT:-}
    boxed "$2" timeout 60 unzip -qq -o "$1" -d "$2" >/dev/null 2>&1
}

cmd_class_one() {
    name=$1 out=$2 student=$3
    who=${student##*/}
    id=$(student_id "$who")
    row=$out/rows/$id.csv json=$out/results/$id.json
    src=$(submission_folder "$name" "$student")
    # resumable: a row newer than every file of the submission stands
    if [ -f "$row" ] && [ -z "$(find "$student" -newer "$row" -type f 2>/dev/null | head -n 1)" ]; then
        return 0
    fi
    score="" max="" status=""
    zip=""
    [ -n "$src" ] || zip=$(find "$student" -type f -name '*.zip' 2>/dev/null | sort | head -n 1)
    if [ -n "$zip" ]; then # handed in as a .zip: unpacked into the work folder, then graded
        if unpack "$zip" "$out/work/$id/unzipped" "$student"; then
            src=$(submission_folder "$name" "$out/work/$id/unzipped")
        else
            status="no .c file (its .zip could not be unpacked, or is too large)"
        fi
    fi
    if [ -z "$src" ]; then
        [ -n "$status" ] || status="no .c file${zip:+ (nor in its .zip)}"
    else
        EX_WORK=$out/work/$id EX_FORMAT=json EX_JSON=$json
        export EX_WORK EX_FORMAT EX_JSON
        g_status=0
        # the submission's time budget; the box (BOX_HIDE) hides the whole class
        timeout -k 10 "$EX_SUBMISSION_TIME" "$0" grade-one "$name" "$src" >/dev/null 2>&1 ||
            g_status=$?
        result=$(score_of "$EX_WORK/${name%%_*}/output.txt" 2>/dev/null || true)
        # the points (the tests the untouched skeleton fails, those earned), else the tests
        points=$(sed -n 's/^score: \([0-9.]*\) of \([0-9]*\) .*/\1 \2/p' \
            "$EX_WORK/${name%%_*}/output.txt" 2>/dev/null | tail -n 1)
        if [ "$g_status" -eq 124 ] || [ "$g_status" -eq 137 ]; then
            status="stopped: over its ${EX_SUBMISSION_TIME} s"
        elif [ -z "$result" ]; then
            status="the grader stopped (exit $g_status)"
        else
            score=${result% *} max=$((${result% *} + ${result#* }))
            [ -z "$points" ] || score=${points% *} max=${points#* }
            status=graded
            grep -q '^the code did not compile' "$EX_WORK/${name%%_*}/output.txt" &&
                status="did not compile"
        fi
    fi
    mkdir -p "$out/rows"
    { csv "$who"; printf ','; csv "$name"; printf ',%s,%s,' "$score" "$max"; csv "$status"; printf ','
      csv "${src:-}"; printf '\n'; } >"$row.tmp"
    mv "$row.tmp" "$row"
}

# grade-one NAME SRC: one grade, quiet (the class runs it in a process of its own).
cmd_grade_one() { grade_one "$1" "$2" 1; }

# class NN SUBMISSIONS [OUT]: grade every student folder of SUBMISSIONS (each
# folder directly inside it is one student, whatever its name) with exercise
# NN, EX_JOBS at once (default: the cores), into OUT (default
# BUILD/class/NN_name): results/ID.json per student, gradebook.csv for all.
cmd_class() {
    [ -n "${1:-}" ] || die "which exercise? make grade-class CH=NN SUBMISSIONS=DIR"
    name=$(find_exercise "$1") || die "no exercise '$1' (make exercise lists them)"
    [ -n "${2:-}" ] || die "make grade-class CH=NN SUBMISSIONS=DIR: which folder holds the submissions?"
    CLASS_ROOT=$(absolute "$2")
    [ -d "$CLASS_ROOT" ] || die "SUBMISSIONS=$2 is not a folder"
    CLASS_ROOT=$(cd "$CLASS_ROOT" && pwd)
    out=${3:-$BUILD/class/$name}
    out=$(absolute "$out")
    case "$out/" in "$CLASS_ROOT"/*) die "OUT=$out is inside SUBMISSIONS: the grades go elsewhere" ;; esac
    mkdir -p "$out/rows" "$out/results" "$out/work"
    CLASS_OUT=$(cd "$out" && pwd) # hidden from the students' code, as the submissions are
    : "${EX_JOBS:=$(nproc 2>/dev/null || echo 2)}" "${EX_SUBMISSION_TIME:=600}"
    export CLASS_ROOT CLASS_OUT EX_SUBMISSION_TIME
    n=$(find "$CLASS_ROOT" -mindepth 1 -maxdepth 1 -type d | wc -l)
    say "grading $n submissions of $name in $(shorter "$CLASS_ROOT"), $EX_JOBS at a time ..."
    box_note
    started=$(date +%s)
    skeleton_baseline "$name" >/dev/null # once, before the workers that read it
    # each folder's name is an argument of its own, never shell text (-print0, xargs -0)
    find "$CLASS_ROOT" -mindepth 1 -maxdepth 1 -type d -print0 |
        xargs -0 -r -n 1 -P "$EX_JOBS" "$0" class-one "$name" "$out"
    took=$(($(date +%s) - started))
    # the rows of the students there are now (a folder removed since has no row)
    { printf 'student,exercise,score,max,status,folder\n'
      find "$CLASS_ROOT" -mindepth 1 -maxdepth 1 -type d | sort | while IFS= read -r c_student; do
          c_row=$out/rows/$(student_id "${c_student##*/}").csv
          [ ! -f "$c_row" ] || cat "$c_row"
      done; } >"$out/gradebook.csv.tmp"
    mv "$out/gradebook.csv.tmp" "$out/gradebook.csv"
    graded=$(grep -c ',"graded",' "$out/gradebook.csv" || true)
    say "$n submissions in $took s on $(nproc 2>/dev/null || echo '?') cores: $graded graded, $((n - graded)) not (did not compile, no file, stopped: the status column says)"
    say "gradebook: $(shorter "$out/gradebook.csv"); each student's results.json in $(shorter "$out/results")/"
}

# ------------------------------------------------------------ make test's checks

# check_dir NAME: into d, the work folder of one check, fresh.
check_dir() {
    d=$BUILD/exercises/check/$1
    [ ! -e "$d" ] || rm -rf "$d"
    mkdir -p "$d"
}

# Says what went wrong with a check, shows the end of the grader's output, fails.
check_failed() {
    out=$1
    shift
    say "exercises: FAILED: $*" >&2
    if [ -f "$out" ]; then
        tail -n 30 "$out" | sed 's/^/    | /' >&2
        say "    (all of it: $out)" >&2
    fi
    exit 1
}

# The grader ran, said "N passed, M failed" with M > 0, and exited 1 (not a crash).
expect_failing_grade() { expect_failing_score "$(score_of "$1")" "$2" "$3" "$1"; }
# expect_failing_score "N M" STATUS WHAT OUT: the same, from the score already read
expect_failing_score() {
    result=$1 status=$2 what=$3 out=$4
    [ -n "$result" ] || check_failed "$out" "$what: the grader gave no score line (exit $status)"
    [ "$status" -eq 1 ] || check_failed "$out" "$what: the grader exited $status, not 1"
    [ "${result#* }" -gt 0 ] || check_failed "$out" "$what passes its key: it should fail"
}

# grade_summary OUT: what a check of a wrong file reads in the grader's output,
# in one program (seven before: make test reads 237 of them): into G_SCORE the
# last score line's "N M" (empty when there is none), into G_SAYS "yes" when
# the output holds $hint (as fixed text, anywhere), and into D/hints.txt the
# text of each "hint:" line, once.
grade_summary() {
    : >"$d/hints.txt"
    HINT=$hint awk -v hints="$d/hints.txt" '
        index($0, ENVIRON["HINT"]) { says = 1 }
        /^[0-9]+ passed, [0-9]+ failed$/ { score = $1 " " $3 }
        /^ *hint: / { h = $0; sub(/^ *hint: /, "", h); if (!(h in seen)) { seen[h] = 1; print h >hints } }
        END { print score; print (says ? "yes" : "no") }' "$1" >"$d/summary.txt"
    { IFS= read -r G_SCORE && IFS= read -r G_SAYS; } <"$d/summary.txt"
}

# quick_key NAME: exercise NAME's KEY (in key) without its chapters' tests
# against their goldens, into QUICK_KEY (BUILD/exercises/lib/NAME.quick), and
# those chapters' suites into CHAPTER_SUITES (empty: the key has none); made
# again only when the KEY changes (make test asks for each of the 218 files).
quick_key() {
    q_out=$BUILD/exercises/lib/$1.quick
    if [ ! -f "$q_out.suites" ] || [ "$key" -nt "$q_out.suites" ]; then
        mkdir -p "${q_out%/*}"
        # (a whole chapter suite in the key has its chapter test too: left out by --except)
        sed -n 's|^\(ch[0-9][0-9]_[a-z_]*\)\(/chapter matches PyTorch golden\)\{0,1\}$|\1|p' "$key" \
            >"$q_out.suites.$$"
        grep -v '/chapter matches PyTorch golden$' "$key" >"$q_out.$$" || :
        mv -f "$q_out.$$" "$q_out"
        mv -f "$q_out.suites.$$" "$q_out.suites" # (last: it says the pair is whole)
    fi
    QUICK_KEY=$q_out CHAPTER_SUITES=""
    while IFS= read -r q_suite; do CHAPTER_SUITES="$CHAPTER_SUITES $q_suite"; done <"$q_out.suites"
}

# key_of NAME: into key, exercise NAME's KEY file.
key_of() {
    key=$ROOT/exercises/$1/KEY
    [ -f "$key" ] || check_failed "" "exercises/$1 has no KEY file (the suites of its answer key)"
}

# A model answer (tests/answers/NN_name/*.c: the exercise solved from its
# skeleton, not copied from lib) is a drop-in for lib: linked in place of lib's
# files, it passes every suite of make test, not only its exercise's key, and
# the grader gives it full marks. A skeleton that does not say lib's whole
# contract (a buffer lib's training reads, a path the tests take) shows here.
cmd_check_answer() {
    dir=$1
    rel=$(shorter "$dir")
    nn=${dir##*/}
    nn=${nn%%_*}
    name=$(find_exercise "$nn") || check_failed "" "$rel: there is no exercises/${nn}_*/ it answers"
    check_dir "$name/answer"
    for f in "$ROOT/exercises/$name"/*.c; do
        [ -f "$dir/${f##*/}" ] || check_failed "" "$rel has no ${f##*/}: an answer has every file of the exercise"
    done
    build_runner "$d" "$name" "$dir"/*.c || check_failed "$d/build.log" "$rel does not compile and link"
    status=0 # every suite, as make test runs them, with the answer in lib's place
    "$d/tests/run" >"$d/suites.txt" 2>&1 || status=$?
    [ "$status" -eq 0 ] || check_failed "$d/suites.txt" "$rel fails a suite of make test (exit $status)"
    tests=$(sed -n 's/^ *tests *\([0-9]*\) .*/\1/p' "$d/suites.txt")
    key_of "$name"
    graded "$d" "$d/tests/run" --key "$key" >"$d/output.txt" 2>&1 || status=$?
    [ "$status" -eq 0 ] || check_failed "$d/output.txt" "$rel does not get full marks from the grader"
    say "exercises: $name: the model answer passes all ${tests:-?} tests of make test and gets full marks ($(sed -n 's/^score: \([0-9.]* of [0-9.]*\).*/\1 points, /p' "$d/output.txt" | tail -n 1)$(score_of "$d/output.txt" | sed 's/ .*//') tests of its key)"
}

# Every hint the exercise's README promises (the first column of the table in
# its section on hints) is printed for a wrong implementation in
# tests/wrong/NN_name/: a row is kept by a file whose "// hint:" or "// also:"
# text is part of the row, or holds a part of it (the row's text cut at
# "…"). So the README promises nothing no test shows; cmd_check_wrong()
# proves the grader prints it.
# readme_table WORD FILE: the rows of the tables in FILE's sections whose "## "
# title holds WORD, less each table's header: the first two cells of a row, a tab
# between, without backquotes and the spaces around them.
readme_table() {
    awk -v word="$1" '/^## / { on = index($0, word) > 0; next }
         !on || !/^\|/ { first = 1; next }
         first { first = 0; next }
         /^\| *-/ { next }
         { n = split($0, cell, "|")
           for (i = 2; i <= 3 && i < n; i++) {
               gsub(/`/, "", cell[i]); sub(/^ +/, "", cell[i]); sub(/ +$/, "", cell[i])
           }
           print cell[2] "\t" (n > 3 ? cell[3] : "") }' "$2"
}

cmd_check_promised() {
    name=$1
    readme=$ROOT/exercises/$name/README.md
    check_dir "$name/promised"
    # shellcheck disable=SC2012 # the names hold no newline
    if ls "$ROOT/tests/wrong/$name"/*.c >/dev/null 2>&1; then
        sed -s -n '1,12{s|^// *hint: *||p;s|^// *also: *||p}' "$ROOT/tests/wrong/$name"/*.c |
            sed 's/[[:space:]]*$//' >"$d/hints.txt"
    else
        : >"$d/hints.txt"
    fi
    # the first cells of the tables in the section whose title holds "hints"
    readme_table hints "$readme" | cut -f 1 >"$d/rows.txt"
    [ -s "$d/rows.txt" ] ||
        check_failed "" "exercises/$name/README.md has no table of hints (in a section titled '## The hints': | hint says | the mistake |)"
    awk 'NR == FNR { if (length($0)) hint[++n] = $0; next }
         { row = $0; kept = 0
           for (i = 1; i <= n && !kept; i++) {
               if (index(row, hint[i])) kept = 1
               parts = split(row, part, /…|\.\.\./)
               for (k = 1; k <= parts && !kept; k++) {
                   p = part[k]; sub(/^ +/, "", p); sub(/ +$/, "", p)
                   if (length(p) > 8 && index(hint[i], p)) kept = 1
               }
           }
           if (!kept) print row }' "$d/hints.txt" "$d/rows.txt" >"$d/missing.txt"
    if [ -s "$d/missing.txt" ]; then
        sed 's/^/    | /' "$d/missing.txt" >&2
        check_failed "" "exercises/$name/README.md promises $(wc -l <"$d/missing.txt") hints that no wrong implementation in tests/wrong/$name/ shows (above)"
    fi
    say "exercises: $name: each of the $(wc -l <"$d/rows.txt") hints its README promises is shown by a wrong implementation"
}

# lib's own functions pass the exercise's key, in grade mode.
cmd_check_key() {
    name=$1
    key_of "$name"
    check_dir "$name/key"
    status=0
    "$EX_RUNNER" --grade --records "$BUILD/exercises/records" --key "$key" >"$d/output.txt" 2>&1 ||
        status=$?
    result=$(score_of "$d/output.txt")
    # shellcheck disable=SC2015 # both must hold: exit 0 and a score line
    [ "$status" -eq 0 ] && [ -n "$result" ] ||
        check_failed "$d/output.txt" "$name: lib's reference does not pass its own key (exit $status)"
    # the two tables of exercises name every one (no exercise the book forgets)
    grep -qF "@ref md_exercises_${name}_README \"$name\" |" "$ROOT/docs/teachers.md" ||
        check_failed "" "$name has no row in the table of docs/teachers.md (The exercises)"
    grep -qF "[$name]" "$ROOT/exercises/README.md" ||
        check_failed "" "$name has no row in the table of exercises/README.md"
    say "exercises: $name: lib passes its key (${result% *} tests)"
}

# The skeleton as committed compiles, links, and fails its key.
cmd_check_skeleton() {
    name=$1
    key_of "$name"
    check_dir "$name/skeleton"
    src=$ROOT/exercises/$name
    from="the skeleton"
    if [ "$(git_state "exercises/$name")" = edited ]; then
        # someone is solving it here: check the committed skeleton, not their work
        mkdir -p "$d/src"
        for f in $(git -C "$ROOT" ls-tree --name-only HEAD -- "exercises/$name/"); do
            case $f in *.c) git -C "$ROOT" show "HEAD:$f" >"$d/src/${f##*/}" ;; esac
        done
        src=$d/src
        from="the committed skeleton"
    fi
    ls "$src"/*.c >/dev/null 2>&1 || check_failed "" "exercises/$name holds no .c file"
    build_runner "$d" "$name" "$src"/*.c || check_failed "$d/build.log" "$name: $from does not compile and link"
    status=0
    # on one thread, as skeleton_baseline() grades it (its table of points depends on it)
    (export OMP_NUM_THREADS=1; graded "$d" "$d/tests/run" --key "$key") >"$d/output.txt" 2>&1 ||
        status=$?
    expect_failing_grade "$d/output.txt" "$status" "$name: $from"
    check_points_table "$name" "$key" "$d"
    say "exercises: $name: $from compiles and fails its key ($(score_of "$d/output.txt" | sed 's/ / passed, /') failed); its README's points are the grader's"
}

# The table of points in exercise NAME's README (section "## How it is scored":
# | points | test |) is what the grader gives, the tests the skeleton passed
# (D/output.txt) at 0. On a difference, the table the README should hold.
check_points_table() {
    name=$1 key=$2 d=$3
    sed -n 's/^PASS  //p' "$d/output.txt" | sed 's/  (.*$//' >"$d/passing.txt"
    "$EX_RUNNER" --grade --list --key "$key" --baseline "$d/passing.txt" >"$d/points.txt" ||
        check_failed "" "$name: the grader could not list the points of $key"
    readme_table scored "$ROOT/exercises/$name/README.md" >"$d/readme_points.txt"
    if ! cmp -s "$d/points.txt" "$d/readme_points.txt"; then
        # (a name ending in a quote goes in double backticks: Doxygen reads ' before a
        # closing backtick as a quotation and breaks the span)
        awk -F '\t' '$2 == "in all" { print "    | " $1 " | in all |"; next }
                     $2 ~ /\047$/ { print "    | " $1 " | `` " $2 " `` |"; next }
                     { print "    | " $1 " | `" $2 "` |" }' "$d/points.txt" >&2
        check_failed "" "exercises/$name/README.md: its table of points (## How it is scored) is not what the grader gives; it should be the table above"
    fi
}

# exercise_mates NAME: into MATES, lib's objects of exercise NAME's files but the
# one a wrong file replaces (hd_file: read_headers() first), space-separated: what
# a student who got only that file wrong hands in beside it. None for a file that
# says "// submitted: alone".
exercise_mates() {
    MATES=""
    [ "$hd_submitted" != alone ] || return 0
    for e_src in "$ROOT/exercises/$1"/*.c; do
        [ "${e_src##*/}" != "$hd_file" ] || continue
        lib_object "${e_src##*/}"
        MATES="$MATES $LIB_OBJECT"
    done
}

# read_headers FILE: the "// WORD: TEXT" lines at the top of a wrong file (below)
# into hd_WORD, TEXT without the blanks around it, in the shell itself (make test
# reads 237 files: a program started for each would cost seconds): "hint" from
# line 1, "also" and " * @file NAME.c" (hd_file) from lines 1 to 12, the others
# from 1 to 10; "key" and "also" a line each time they come, the others the first.
read_headers() {
    hd_hint="" hd_also="" hd_file="" hd_key="" hd_exercise="" hd_submitted="" hd_canary=""
    hd_hides="" hd_orphan="" hd_timeout="" hd_build="" hd_twice="" hd_grade="" hd_stage=""
    r_nr=0
    while [ "$r_nr" -lt 12 ] && IFS= read -r r_line; do
        r_nr=$((r_nr + 1))
        case $r_line in
            " * @file "*)
                r_text=${r_line#" * @file"} && r_text=${r_text#"${r_text%%[! ]*}"}
                r_text=${r_text%%" "*}
                case $r_text in *.c) [ -n "$hd_file" ] || hd_file=$r_text ;; esac
                continue ;;
            //*:*) ;;
            *) continue ;;
        esac
        r_word=${r_line#//} && r_word=${r_word#"${r_word%%[! ]*}"}
        r_text=${r_word#*:} && r_word=${r_word%%:*}
        r_text=${r_text#"${r_text%%[! ]*}"} && r_text=${r_text%"${r_text##*[!"$BLANKS"]}"}
        case $r_word in
            hint) [ "$r_nr" -gt 1 ] || hd_hint=$r_text ;;
            also) hd_also=${hd_also:+$hd_also$NL}$r_text ;;
            key) [ "$r_nr" -gt 10 ] || hd_key=${hd_key:+$hd_key$NL}$r_text ;;
            exercise | submitted | canary | hides | orphan | timeout | build | twice | grade | stage)
                # (the name is one of these words, the text a value: eval runs nothing of it)
                [ "$r_nr" -gt 10 ] || eval "[ -n \"\$hd_$r_word\" ] || hd_$r_word=\$r_text" ;;
        esac
    done <"$1"
}

# A wrong implementation compiles, fails the key, and the output holds its hint.
# Its first line is "// hint: TEXT"; among its first ten lines it may have
# "// key: SUITE[/TEST]" lines (a key of its own instead of its exercise's),
# "// timeout: SECONDS", "// build: fails" (it must not compile or link: the
# report of a build that failed is what is checked), "// submitted: alone"
# (the exercise's other files missing), "// exercise: NN" (a grader check
# graded under that exercise's rules), "// grade: passes" (a grader check
# of a right answer: the grade must pass, its output still holding the hint),
# "// twice: same" (graded a second time, the same tests must fail the same
# way), "// stage: NN" (make stage-checks: the stage the mistake belongs to when
# it is not the file's chapter: a part an earlier chapter teaches, or one only a
# later stage uses, as the backward's), and for the box's checks "// canary: PATH" (a file under the checkout the
# code tries to remove: made before, there after), "// hides: PATH" (a folder
# of another student's work beside it, hidden from the code) and
# "// orphan: NAME" (no process of that name may be left after the grade).
# Every hint the grade prints must hold the hint's TEXT or that of one of the
# file's "// also: TEXT" lines (the same mistake, as another probe sees it):
# a hint that names another mistake fails the check. tests/grader/*.c, the grader's own
# checks, use them; tests/wrong/NN_name/*.c mostly need none.
cmd_check_wrong() {
    file=$1
    rel=${file#"$ROOT"/}
    read_headers "$file"
    hint=$hd_hint
    [ -n "$hint" ] ||
        check_failed "" "$rel: its first line must be '// hint: TEXT', TEXT being what the grader's output must say"
    base=${rel##*/}
    own_key=$hd_key
    if [ -n "$own_key" ]; then
        name=grader
        check_dir "grader/${base%.c}"
        printf '%s\n' "$own_key" >"$d/KEY"
        key=$d/KEY
    else
        dirname=${rel%/*}
        dirname=${dirname##*/} # NN_name
        nn=${dirname%%_*}
        exercise_named "$nn" ||
            check_failed "" "$rel: there is no exercises/${nn}_*/ to grade it with"
        name=$EXERCISE
        key_of "$name"
        check_dir "$name/wrong-${base%.c}"
    fi
    # What is graded: the file, and for an exercise of several files (08's gelu.c,
    # layernorm.c, block.c) lib's own versions of the others, as a student who got
    # only this one wrong would hand in; "// submitted: alone" grades the file by
    # itself (the others missing). A grader check (its own key) is graded against
    # all of lib, unless "// exercise: NN" names an exercise whose rules it tests.
    # lib's versions are the objects the build already made of them (the same
    # source and flags; only the student's flag that fills uninitialised
    # variables is missing, and lib's code reads none): compiling them again for
    # each of the 218 files would cost make test about 10 s.
    ex=$name
    [ "$name" != grader ] || { exercise_named "$hd_exercise" || :; ex=$EXERCISE; }
    set -- "$file"
    MATES=""
    [ "$name" = grader ] || exercise_mates "$name" # (the objects' paths hold no spaces)
    # shellcheck disable=SC2086
    [ -z "$MATES" ] || set -- "$@" $MATES
    # the box's own checks: a file the code must not remove, a neighbour's folder
    # it must not see, a process it must not leave behind
    canary=$hd_canary hides=$hd_hides orphan=$hd_orphan
    BOX_SOURCE="" BOX_HIDE=""
    [ -z "$canary" ] || printf 'the teacher'"'"'s\n' >"$ROOT/$canary"
    if [ -n "$hides" ]; then
        mkdir -p "$ROOT/$hides/another-student"
        printf 'float dot(void); /* another student'"'"'s work */\n' >"$ROOT/$hides/another-student/dot.c"
        BOX_HIDE=$ROOT/$hides
    fi
    status=0 of=""
    timeout=$hd_timeout
    # its runner without debug information: no one steps through it, and the link
    # takes 0.18 s, not 0.25 (make test links 237 of them)
    B_LDFLAGS=-Wl,--strip-debug
    if [ "$hd_build" = fails ]; then
        ! build_runner "$d" "$ex" "$@" || check_failed "$d/build.log" "$rel compiles: it should not"
        set -- --key "$key" ${timeout:+--timeout "$timeout"}
        "$EX_RUNNER" --grade --build-failed --build-log "$d/build.log" "$@" \
            >"$d/output.txt" 2>&1 || status=$?
    else
        build_runner "$d" "$ex" "$@" || check_failed "$d/build.log" "$rel does not compile and link"
        set -- --key "$key" ${timeout:+--timeout "$timeout"}
        # First the key without its chapter-against-golden tests, the slow ones (a
        # chapter replayed): when the rest already fail with the hint, the whole key
        # fails with it too, since those tests are in it. Only otherwise the whole key.
        CHAPTER_SUITES=""
        [ "$name" = grader ] || quick_key "$name"
        if [ -n "$CHAPTER_SUITES" ]; then
            set --
            for s in $CHAPTER_SUITES; do set -- "$@" --except "$s/chapter matches PyTorch golden"; done
            quick=0
            graded "$d" "$d/tests/run" --key "$QUICK_KEY" "$@" ${timeout:+--timeout "$timeout"} \
                >"$d/output.txt" 2>&1 || quick=$?
            grade_summary "$d/output.txt"
            if [ "$quick" -eq 1 ] && [ "$G_SAYS" = yes ]; then
                status=1 of=", the key without its chapter test"
            fi
        fi
        set -- --key "$key" ${timeout:+--timeout "$timeout"}
        [ -n "$of" ] || graded "$d" "$d/tests/run" "$@" >"$d/output.txt" 2>&1 || status=$?
    fi
    [ -n "$of" ] || grade_summary "$d/output.txt"
    if [ -n "$canary" ]; then
        [ -f "$ROOT/$canary" ] || check_failed "$d/output.txt" "$rel removed $canary: the box did not hold"
        rm -f "$ROOT/$canary"
    fi
    [ -z "$hides" ] || rm -rf "${ROOT:?}/$hides"
    if [ -n "$orphan" ]; then # given a moment to be reaped
        n=0
        while pgrep -x "$orphan" >/dev/null 2>&1 && [ "$n" -lt 20 ]; do sleep 0.1; n=$((n + 1)); done
        ! pgrep -x "$orphan" >/dev/null 2>&1 ||
            { pkill -9 -x "$orphan"; check_failed "$d/output.txt" "$rel left processes named $orphan running after its grade"; }
    fi
    if [ "$hd_twice" = same ]; then # graded again: the same tests fail, the same way
        graded "$d" "$d/tests/run" "$@" >"$d/output2.txt" 2>&1 || true
        grep '^PASS\|^FAIL\|failed' "$d/output.txt" | sed 's/  ([0-9.]* s)//' >"$d/verdicts1.txt"
        grep '^PASS\|^FAIL\|failed' "$d/output2.txt" | sed 's/  ([0-9.]* s)//' >"$d/verdicts2.txt"
        cmp -s "$d/verdicts1.txt" "$d/verdicts2.txt" ||
            check_failed "$d/output2.txt" "$rel: graded twice, it got two different grades"
    fi
    if [ "$hd_grade" = passes ]; then # a grader check of a right answer
        [ "$status" -eq 0 ] ||
            check_failed "$d/output.txt" "$rel: the grader exited $status; this right answer should pass"
        [ "$G_SAYS" = yes ] ||
            check_failed "$d/output.txt" "$rel passes, but the grader's output never says \"$hint\""
        say "exercises: the grader passes ${base} (${G_SCORE%% *} passed, ${G_SCORE#* } failed), saying \"$hint\""
        return 0
    fi
    expect_failing_score "$G_SCORE" "$status" "$rel" "$d/output.txt"
    [ "$G_SAYS" = yes ] ||
        check_failed "$d/output.txt" "$rel fails, but the grader's output never says \"$hint\""
    # and no hint names another mistake: each says the hint, or one of the
    # "// also: TEXT" lines (the same mistake seen by another probe); the
    # hints are in hints.txt, each once (grade_summary())
    also=$hd_also
    while IFS= read -r h; do
        case $h in *"$hint"*) continue ;; esac
        h_same=""
        while IFS= read -r a; do
            case $h in *"$a"*) [ -z "$a" ] || h_same=yes ;; esac
        done <<EOF_ALSO
$also
EOF_ALSO
        [ -z "$h_same" ] || continue
        check_failed "$d/output.txt" "$rel: a hint names something else than its mistake (add '// also: TEXT' if it is the same one): $h"
    done <"$d/hints.txt"
    result="${G_SCORE%% *} passed, ${G_SCORE#* } failed$of"
    if [ "$name" = grader ]; then
        say "exercises: the grader survives ${base} ($result), saying \"$hint\""
    else
        say "exercises: $name: wrong ${base} fails ($result), saying \"$hint\""
    fi
}

# A wrong file's mistake as a learner who made it in lib/ sees it: the runner
# with the file in lib's place (linked as check-wrong links it), run as make
# test CH=NN runs it: every suite of the stages down to the file's chapter NN,
# the chapters' tests against their goldens included. The runner's summary must
# name chapter NN as the first wrong stage: a mistake made while working on
# chapter NN fails first there, not at an earlier chapter that happens to call
# the function, and not nowhere. (make stage-checks: every suite down to NN for
# each file is too long for make test.)
cmd_check_stage() {
    file=$1
    rel=$(shorter "$file")
    base=${rel##*/}
    read_headers "$file"
    dirname=${rel%/*}
    dirname=${dirname##*/}
    nn=${dirname%%_*}
    name=$(find_exercise "$nn") || check_failed "" "$rel: there is no exercises/${nn}_*/ it belongs to"
    if [ "$hd_build" = fails ]; then
        say "exercises: $name: $base does not compile: it fails at the compiler, before any stage"
        return 0
    fi
    check_dir "$name/stage-${base%.c}"
    set -- "$file"
    exercise_mates "$name" # lib's own versions of the exercise's other files, as check-wrong
    # shellcheck disable=SC2086 # (the objects' paths hold no spaces)
    [ -z "$MATES" ] || set -- "$@" $MATES
    B_LDFLAGS=-Wl,--strip-debug
    build_runner "$d" "$name" "$@" || check_failed "$d/build.log" "$rel does not compile and link"
    own=${hd_stage:-$nn} # "// stage: NN": the stage of the part of the file the mistake is in
    case $own in
        [0-9][0-9]) ;;
        *) check_failed "" "$rel: '// stage: $hd_stage' is not a chapter's two digits (// stage: NN)" ;;
    esac
    up_to=$nn
    [ "$own" -le "$nn" ] || up_to=$own # (a stage after the file's chapter: run down to it)
    status=0
    "$d/tests/run" --up-to "$up_to" >"$d/suites.txt" 2>&1 || status=$?
    first=$(sed -n 's/^first wrong stage: //p' "$d/suites.txt")
    case $first in
        "chapter $own "*) say "exercises: $name: wrong $base fails first at its own stage: $first" ;;
        "") check_failed "$d/suites.txt" "$rel: no test down to chapter $up_to fails (exit $status)" ;;
        *) check_failed "$d/suites.txt" "$rel fails first at $first, not at chapter $own" ;;
    esac
}

# make exercise itself, run with values that would run a command if make pasted
# them into the text of a shell command ('$(DIR)' with DIR="x'; touch F; '"
# runs touch): a DIR and a JSON holding a quote, a command and spaces, then a CH
# and a TIMEOUT holding one. The odd folders hold lib's own files for exercise
# NAME, so a correct grade passes every test. No run may leave the file F; the
# first two must grade the folder named, the third must say there is no such
# exercise. Its make writes its grades to a folder of its own (EX_WORK), so a
# student's last score stays as it was.
cmd_check_quoting() {
    name=$1
    nn=${name%%_*}
    check_dir quoting
    d=$(cd "$d" && pwd)
    ran=$d/a-command-ran # made only if a value was run as shell text
    plain=$d/"it's here"
    odd=$d/"x'; touch $ran; '" # the '/' of $ran make it folders within folders: fine
    mkdir -p "$plain" "$odd"
    for f in "$ROOT/exercises/$name"/*.c; do # lib's files of the same names: the right answer
        lib=$(lib_file "${f##*/}")
        [ -n "$lib" ] ||
            check_failed "" "exercises/$name/${f##*/} has no lib/*/${f##*/} to grade as the right answer"
        cp "$lib" "$plain/" && cp "$lib" "$odd/"
    done
    # a learner's make exercise, in this build (MAKEFLAGS passes this make's flags on)
    learner_make() { EX_WORK=$d/work "${EX_MAKE:-make}" --no-print-directory exercise "$@"; }
    n=0
    for dir in "$plain" "$odd"; do
        n=$((n + 1))
        out=$d/make-$n.txt
        status=0
        learner_make CH="$nn" DIR="$dir" FORMAT=json JSON="$dir/results.json" >"$out" 2>&1 ||
            status=$?
        [ ! -e "$ran" ] || check_failed "$out" "make exercise ran a command from DIR or JSON ($ran exists)"
        [ "$status" -eq 0 ] ||
            check_failed "$out" "make exercise DIR=\"$dir\" exited $status: lib's own files should pass"
        result=$(score_of "$out")
        # shellcheck disable=SC2015 # both must hold: a score, and nothing failed
        [ -n "$result" ] && [ "${result#* }" -eq 0 ] ||
            check_failed "$out" "make exercise DIR=\"$dir\" did not grade lib's files as passing"
        # the score file's second field is the folder graded
        [ "$(cut -f 2 "$d/work/$nn/score")" = "$dir" ] ||
            check_failed "$d/work/$nn/score" "the grade is not of DIR=\"$dir\""
        [ -s "$dir/results.json" ] || check_failed "$out" "no results at JSON=\"$dir/results.json\""
    done
    out=$d/make-ch.txt
    status=0
    learner_make CH="$nn'; touch $ran; '" TIMEOUT="30'; touch $ran; '" >"$out" 2>&1 || status=$?
    [ ! -e "$ran" ] || check_failed "$out" "make exercise ran a command from CH or TIMEOUT ($ran exists)"
    # shellcheck disable=SC2015
    [ "$status" -eq 2 ] && grep -qF "no exercise '$nn'; touch" "$out" ||
        check_failed "$out" "make exercise CH=\"$nn'; touch ...\" exited $status: it should say there is no such exercise (exit 2)"
    say "exercises: make exercise takes CH, DIR, JSON and TIMEOUT as values, never as shell text ($name graded in \"it's here\" and \"x'; touch ...; '\")"
}

# A class, as an LMS bulk download lays it out: one folder per student with a
# quote, spaces, a semicolon, $(...) and backquotes, non-ASCII letters, the
# files nested in a subfolder, none at all, a renamed function and a wrong one.
# One command grades them all into a gradebook, each name only ever a value
# (no command in a name runs), and a second run grades nothing again.
cmd_check_class() {
    name=$1
    check_dir class
    d=$(cd "$d" && pwd)
    sub=$d/submissions ran=$d/a-command-ran
    right=$(lib_file dot.c)
    [ "$name" = 01_dot_product ] || check_failed "" "check-class grades exercise 01 (dot.c)"
    mkdir -p "$sub/Sean O'Brien_456_assignsubmission_file_/hw 1" "$sub/Zoë Ålund_7_" \
        "$sub/x; touch $(basename "$ran")_8_" "$sub/\$(touch $(basename "$ran"))_9_" \
        "$sub/\`touch $(basename "$ran")\`_10_" "$sub/empty_11_" "$sub/renamer_12_" "$sub/wrong_13_" \
        "$sub/zipped_14_/onlinetext"
    # handed in as a .zip in a subfolder (hw1/dot.c inside), as LMS downloads keep them
    cp "$ROOT/tests/data/class/hw1-dot.zip" "$sub/zipped_14_/onlinetext/submission.zip"
    cp "$right" "$sub/Sean O'Brien_456_assignsubmission_file_/hw 1/"
    for s in "Zoë Ålund_7_" "x; touch $(basename "$ran")_8_" "\$(touch $(basename "$ran"))_9_" \
        "\`touch $(basename "$ran")\`_10_"; do cp "$right" "$sub/$s/"; done
    cp "$ROOT/tests/wrong/01_dot_product/renamed_dot.c" "$sub/renamer_12_/dot.c"
    cp "$ROOT/tests/wrong/01_dot_product/skips_last_product.c" "$sub/wrong_13_/dot.c"
    (cd "$d" && EX_JOBS=2 EX_POINTS=18 EX_VISIBILITY=after_due_date \
        "$ROOT/tests/exercises.sh" class "$name" "$sub" "$d/out") >"$d/class.txt" 2>&1 ||
        check_failed "$d/class.txt" "grading a class failed"
    [ ! -e "$ran" ] && [ ! -e "$d/out/$(basename "$ran")" ] ||
        check_failed "$d/class.txt" "a folder's name ran as a command"
    book=$d/out/gradebook.csv
    [ "$(wc -l <"$book")" -eq 10 ] || check_failed "$book" "the gradebook should have a header and 9 rows"
    # 12 points: the 9 tests of the key (the chapter's 3, PyTorch's 2, 1 each), none
    # of which the untouched skeleton passes (its zeros are symmetric, but not lib's numbers)
    for want in "\"Sean O'Brien_456_assignsubmission_file_\",\"$name\",12,12,\"graded\"" \
        "\"Zoë Ålund_7_\",\"$name\",12,12,\"graded\"" \
        "\"x; touch $(basename "$ran")_8_\",\"$name\",12,12,\"graded\"" \
        "\"\$(touch $(basename "$ran"))_9_\",\"$name\",12,12,\"graded\"" \
        "\"empty_11_\",\"$name\",,,\"no .c file\"" \
        "\"renamer_12_\",\"$name\",0,12,\"did not compile\"" \
        "\"wrong_13_\",\"$name\",0,12,\"graded\"" \
        "\"zipped_14_\",\"$name\",12,12,\"graded\""; do
        grep -qF -- "$want" "$book" || check_failed "$book" "the gradebook has no row $want"
    done
    [ "$(find "$d/out/results" -name '*.json' | wc -l)" -eq 8 ] ||
        check_failed "$book" "8 students' results.json were expected in $d/out/results"
    [ ! -e "$sub/zipped_14_/onlinetext/hw1" ] ||
        check_failed "$book" "the .zip was unpacked beside the submission: it must go to the work folder"
    # Gradescope's points out of POINTS, and its visibility
    sean=$d/out/results/$(student_id "Sean O'Brien_456_assignsubmission_file_").json
    grep -q '"max_score":.18,' "$sean" && grep -q '"score":.18,' "$sean" &&
        grep -q '"visibility":.*"after_due_date"' "$sean" ||
        check_failed "$sean" "results.json should give 18 of POINTS=18, visibility after_due_date"
    # shared by weight: the chapter's test, 3 of 12 points, is worth 4.5 of the 18
    awk '/"name":.*"ch01_dot_product\/chapter matches PyTorch golden"/ { on = 1 }
         on && /"max_score":/ { ok = /"max_score":[ \t]*4.5,/; exit } END { exit !ok }' "$sean" ||
        check_failed "$sean" "the chapter's test should be worth 4.5 of POINTS=18 (3 of the key's 12 points)"
    # a slip in a KEY's weight line stops the grade before any test runs, naming it
    for slip in "weight 2 ops/no such test" "weight 11 dot/dot matches PyTorch" "weight two ops"; do
        printf 'dot/dot matches PyTorch\n%s\n' "$slip" >"$d/slip.KEY"
        w_status=0
        "$EX_RUNNER" --grade --list --key "$d/slip.KEY" >"$d/slip.txt" 2>&1 || w_status=$?
        [ "$w_status" -eq 2 ] && grep -qF "$(printf '%s' "$slip" | cut -c 1-15)" "$d/slip.txt" ||
            check_failed "$d/slip.txt" "the KEY line '$slip' should stop the grade (exit 2) and be named"
    done
    # a results file that is not a regular file is refused before any work, and left
    # as it was (a FIFO here: /dev/null as root was once replaced by a rename)
    mkfifo "$d/fifo.json"
    f_status=0
    (cd "$d" && EX_FORMAT=json EX_JSON=$d/fifo.json "$ROOT/tests/exercises.sh" grade "$name" \
        "$sub/wrong_13_") >"$d/fifo.txt" 2>&1 || f_status=$?
    [ "$f_status" -eq 2 ] && [ -p "$d/fifo.json" ] && grep -q 'not a regular file' "$d/fifo.txt" ||
        check_failed "$d/fifo.txt" "JSON= naming a FIFO should be refused (exit 2) and left a FIFO"
    cp "$book" "$d/first.csv"
    (cd "$d" && "$ROOT/tests/exercises.sh" class "$name" "$sub" "$d/out") >"$d/again.txt" 2>&1 ||
        check_failed "$d/again.txt" "grading the class again failed"
    cmp -s "$book" "$d/first.csv" || check_failed "$book" "grading again changed the gradebook"
    say "exercises: a class of 9 folders (quotes, spaces, \$(...), nested, zipped, empty, renamed, wrong) graded into a gradebook ($(sed -n 's/.* in \([0-9]*\) s on .*/\1 s/p' "$d/class.txt")), and resumed"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
    grade) cmd_grade "$@" ;;
    list) cmd_list ;;
    all) cmd_all "$@" ;;
    check-key) cmd_check_key "$1" ;;
    check-skeleton) cmd_check_skeleton "$1" ;;
    check-wrong) cmd_check_wrong "$(absolute "$1")" ;;
    check-stage) cmd_check_stage "$(absolute "$1")" ;;
    check-answer) cmd_check_answer "$(absolute "$1")" ;;
    check-promised) cmd_check_promised "$1" ;;
    check-quoting) cmd_check_quoting "$1" ;;
    class) cmd_class "$@" ;;
    check-class) cmd_check_class "$1" ;;
    class-one) cmd_class_one "$@" ;;
    grade-one) cmd_grade_one "$@" ;;
    *) die "usage: tests/exercises.sh grade NN [DIR] | list | all [DIR] | class NN SUBMISSIONS [OUT] | check-key NN_name | check-skeleton NN_name | check-wrong FILE | check-stage FILE | check-quoting NN_name" ;;
esac
