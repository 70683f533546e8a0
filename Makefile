# ViT from scratch in C.
#
#   make            build the library, chapters, tools, viewer and tests
#   make run        install missing packages, build, open vitview on the trained
#                   Fashion-MNIST model and a test image (ARGS='...' for vitview's options)
#   make test       install missing packages, build, check lib's include graph has
#                   no upward edge between its layer folders (make include-layers)
#                   and its link graph no cycle (make link-graph), that no test takes
#                   its expected value from the code it tests (make test-references),
#                   run every test suite in the book's order; CH=NN: only the stages
#                   up to chapter NN
#   make sanitize   the same tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make docs       Doxygen book into docs/html (warnings are errors)
#   make docs-check the book opened in headless Chromium: formulas, pictures, links; numbers
#   make bench      GEMM (and OpenBLAS's kernels), ViT-B/16 forward, training-step and
#                   safetensors-parsing benchmarks, the speed targets; the forward and
#                   the training step beside PyTorch's when /usr/bin/python3 has torch
#   make fuzz       libFuzzer on the safetensors and image parsers (clang)
#   make goldens    regenerate tests/golden with PyTorch (tools/gen_golden*.py; dev-time only),
#                   then say which files changed and by how much [GOLDEN_DIR=dir]
#   make exercise CH=NN [DIR=path] [FORMAT=json] [JSON=path] [TIMEOUT=s] [SANITIZE=1]
#                   [POINTS=p] [VISIBILITY=hidden|after_due_date|...] (results.json)
#                   grade a student's functions with the exercise's answer key
#   make exercise   list the exercises, their state and last grade
#   make exercise-all [DIR=path]  grade every exercise, a table of the results
#   make grade-class CH=NN SUBMISSIONS=DIR [OUT=dir] [JOBS=n]  grade a class: a
#                   gradebook CSV and each student's results.json
#   make clean
#
# Options: BLAS=0 (no OpenBLAS), NO_OMP=1 (no OpenMP), WERROR=1 (warnings are
# errors), CC=clang, BUILD=dir. Each BUILD dir holds the objects of one set of
# flags: changing CC or a flag rebuilds what that dir holds, and build/sanitize,
# build/fuzz or build/clang never mix with build/.

CC      ?= cc
BUILD   ?= build
# -O3: GCC 12 vectorises a loop with an unknown trip count (a bias add, a
# residual) only from -O3 on; the results are the same bits as -O2 (no -ffast-math).
OPT     ?= -O3
CFLAGS  ?= $(OPT) -g
# The tests' own code (their checks, the references they spell out in plain
# loops) is compiled at -O1: at -O3 it took 37 s of a fresh build's 101 s of
# CPU, at -O1 24 s, and the time the tests take is spent in lib, at $(OPT).
# The bits are the same at every level (no -ffast-math; ISO C contracts
# no a*b+c into an FMA). TEST_OPT= compiles them as the rest; CFLAGS given by
# hand are left as they are.
TEST_OPT ?= $(if $(filter file default undefined,$(origin CFLAGS)),-O1)
# -march: generic x86-64 stays portable; the GEMM kernel picks wider SIMD at run time.
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
ifeq ($(WERROR),1)
  WARN  += -Werror
endif
CPPFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Ilib $(shell pkg-config --cflags libcjson stb 2>/dev/null)
LDLIBS_BASE   := $(shell pkg-config --libs libcjson stb zlib 2>/dev/null || echo -lcjson -lstb -lz) -lm

# ---------------------------------------------------------------- detection
# Each optional part is found by compiling a tiny program, and reported.
HASH := \#
COMMA := ,
try_cc = $(shell printf '$(2)' | $(CC) -x c - -o /dev/null $(1) >/dev/null 2>&1 && echo yes)

ifeq ($(NO_OMP),1)
  HAVE_OMP :=
else
  HAVE_OMP := $(call try_cc,-fopenmp,$(HASH)include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n)
endif
ifeq ($(HAVE_OMP),yes)
  OMP_FLAGS := -fopenmp
else
  OMP_FLAGS := -Wno-unknown-pragmas
endif

# Prefer Debian's OpenMP build of OpenBLAS: it shares our OpenMP thread pool.
# The default (pthreads) build runs its own threads, which fight OpenMP's
# spinning workers for the cores and make a forward pass ~5x slower.
BLAS_OMP_DIR := $(wildcard /usr/lib/$(shell gcc -print-multiarch 2>/dev/null)/openblas-openmp)
ifneq ($(and $(BLAS_OMP_DIR),$(HAVE_OMP)),)
  BLAS_PC := PKG_CONFIG_PATH=$(BLAS_OMP_DIR)/pkgconfig
  BLAS_RPATH := -Wl,-rpath,$(BLAS_OMP_DIR)
  BLAS_KIND := OpenMP build
endif
BLAS_CFLAGS := $(shell $(BLAS_PC) pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell $(BLAS_PC) pkg-config --libs openblas 2>/dev/null || echo -lopenblas) $(BLAS_RPATH)
ifeq ($(BLAS),0)
  HAVE_BLAS :=
else
  HAVE_BLAS := $(call try_cc,$(BLAS_CFLAGS) $(BLAS_LIBS),$(HASH)include <cblas.h>\nint main(void){float x=2;return cblas_sdot(1$(COMMA)&x$(COMMA)1$(COMMA)&x$(COMMA)1) != 4;}\n)
endif
ifeq ($(HAVE_BLAS),yes)
  BLAS_FLAGS := -DVIT_HAVE_BLAS $(BLAS_CFLAGS)
else
  BLAS_LIBS  :=
endif

# The linker: binutils' gold when the compiler can use it. make test links a
# runner for each exercise check, some 270 of them, and gold takes about half
# of ld.bfd's 0.15 s a link; the programs are the same (make LINKER=bfd
# keeps the default linker).
ifneq ($(LINKER),bfd)
  LINK_FLAGS := $(if $(call try_cc,-fuse-ld=gold,int main(void){return 0;}\n),-fuse-ld=gold)
endif

ALL_CFLAGS := $(CPPFLAGS_BASE) $(BLAS_FLAGS) $(OMP_FLAGS) $(WARN) $(CFLAGS) $(EXTRA_CFLAGS)
ALL_LDLIBS := $(LDLIBS_BASE) $(BLAS_LIBS) $(OMP_FLAGS) $(LINK_FLAGS) $(EXTRA_LDFLAGS)

# ------------------------------------------------------------------ sources
LIB_SRC      := $(sort $(wildcard lib/*/*.c))
LIB_OBJ      := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB          := $(BUILD)/libvit.a

CHAPTER_SRC  := $(sort $(wildcard chapters/[0-9][0-9]_*.c))
CHAPTER_BIN  := $(CHAPTER_SRC:chapters/%.c=$(BUILD)/chapters/%)
CHAPTER_OBJ  := $(CHAPTER_SRC:%.c=$(BUILD)/%.o)
# the same chapters without their main(), linked into the test runner
CHAPTER_TOBJ := $(CHAPTER_SRC:chapters/%.c=$(BUILD)/tests/chapters/%.o)

TEST_SRC     := $(sort $(wildcard tests/*.c))
TEST_OBJ     := $(TEST_SRC:%.c=$(BUILD)/%.o)
TEST_SUITES  := $(patsubst tests/test_%.c,%,$(filter tests/test_%.c,$(TEST_SRC)))
TEST_RUNNER  := $(BUILD)/tests/run

VIT_SRC      := $(sort $(wildcard cli/*.c))
VIT_OBJ      := $(VIT_SRC:%.c=$(BUILD)/%.o)
VIT_BIN      := $(if $(VIT_SRC),$(BUILD)/vit)
BENCH_SRC    := $(wildcard benchmarks/bench.c)
BENCH_OBJ    := $(BENCH_SRC:%.c=$(BUILD)/%.o)
BENCH_BIN    := $(if $(BENCH_SRC),$(BUILD)/bench)
VIEWER_SRC   := $(sort $(wildcard viewer/*.c))
VIEWER_OBJ   := $(VIEWER_SRC:%.c=$(BUILD)/%.o)
VIEWER_BIN   := $(if $(VIEWER_SRC),$(BUILD)/vitview)
# the viewer's terminal-free parts (all but main.c and the curses tui_*.c),
# linked into the runner for the viewer_* suites
VIEWER_PURE_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(filter-out viewer/main.c viewer/tui_%.c,$(VIEWER_SRC)))
# what the runner is linked from, before $(LIB): the same list for a student's
# runner (make exercise), so the answer key is exactly the suites make test runs
RUNNER_OBJ   := $(TEST_OBJ) $(CHAPTER_TOBJ) $(VIEWER_PURE_OBJ)
# (-rdynamic: the grader names the functions a crash happened in)
RUNNER_LIBS   = -rdynamic -lcunit $(ALL_LDLIBS)

# the exercises there are (exercises/NN_name/) and the wrong implementations
# that must fail them (tests/wrong/NN_name/*.c): found when make runs
EXERCISES    := $(patsubst exercises/%/,%,$(sort $(wildcard exercises/[0-9][0-9]_*/)))
WRONG_SRC    := $(sort $(wildcard tests/wrong/[0-9][0-9]_*/*.c))
# the grader's own checks: a crash, an endless loop, exit(), a compile error
GRADER_CHECK_SRC := $(sort $(wildcard tests/grader/*.c))

# Every object of this BUILD, named: none is an intermediate file that make
# would delete (and so rebuild next time), and only their own .d files are read.
ALL_OBJ      := $(LIB_OBJ) $(CHAPTER_OBJ) $(CHAPTER_TOBJ) $(TEST_OBJ) $(VIT_OBJ) $(BENCH_OBJ) $(VIEWER_OBJ)

.PHONY: all run test sanitize docs docs-check bench clean deps config chapters chapters-run lib fuzz goldens \
        exercise exercise-all exercise-checks grade-class link-graph include-layers \
        test-references
.DEFAULT_GOAL := all

all: $(LIB) $(CHAPTER_BIN) $(VIT_BIN) $(VIEWER_BIN) $(BENCH_BIN) $(TEST_RUNNER)

CONFIG_LINE = build: $(CC), OpenMP: $(if $(HAVE_OMP),yes,no), OpenBLAS: $(if $(HAVE_BLAS),yes $(if $(BLAS_KIND),($(BLAS_KIND)),(pthreads build)),no) -> $(BUILD)/
config:
	@echo "$(CONFIG_LINE)"

# with CC=clang, also clang and LLVM's OpenMP (clang's omp.h and libomp)
DEPS_EXTRA := $(if $(findstring clang,$(notdir $(CC))),clang $(if $(filter 1,$(NO_OMP)),,libomp-dev))
deps:
	@./scripts/deps.sh $(DEPS_EXTRA)

# ------------------------------------------------------------------- rules
# $(BUILD)/flags records the compiler and flags this BUILD's files were made
# with; it changes (and everything is rebuilt) only when they do. FLAGS_TEXT is
# taken here, once: the per-target additions below must not leak into it.
# It is written while make reads this file, not by a rule that always runs, so
# that `make -q` can say truthfully whether anything is out of date.
# $(BUILD)/paths likewise records where the tree is: the objects that have a
# path compiled in (the tests' folder, the labels' folder) depend on it, so a
# tree copied or moved elsewhere rebuilds them and never reads the original's.
FLAGS_FILE := $(BUILD)/flags
FLAGS_TEXT := '$(CC)' '$(ALL_CFLAGS)' '$(ALL_LDLIBS)' 'tests: $(TEST_OPT)'
PATHS_FILE := $(BUILD)/paths
# (The line saying what the build found is printed when the flags are first
# recorded or change; `make config` prints it any time.) What record_if_changed
# answers is assigned, never left alone on a line: a line reading "changed"
# would stop make with "missing separator".
record_if_changed = $(shell mkdir -p $(dir $(1)) && printf '%s\n' $(2) > $(1).tmp && \
  { cmp -s $(1).tmp $(1) && rm -f $(1).tmp || { mv $(1).tmp $(1) && echo changed; }; })
ifeq ($(filter clean,$(MAKECMDGOALS)),)
  ifneq ($(call record_if_changed,$(FLAGS_FILE),$(FLAGS_TEXT)),)
    $(info $(CONFIG_LINE))
  endif
  PATHS_CHANGED := $(call record_if_changed,$(PATHS_FILE),'$(CURDIR)')
endif

$(BUILD)/%.o: %.c $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CHAPTER_BIN): $(BUILD)/chapters/%: $(BUILD)/chapters/%.o $(LIB)
	$(CC) $(ALL_CFLAGS) $< $(LIB) $(ALL_LDLIBS) -o $@

# the programs that compute a picture's points for the book (scripts/docs.sh)
PLOT_SRC := $(wildcard docs/plots/*.c)
.SECONDARY: $(PLOT_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/plots/%: $(BUILD)/docs/plots/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< $(LIB) $(ALL_LDLIBS) -o $@

$(BUILD)/tests/chapters/%.o: chapters/%.c $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DCHAPTER_NO_MAIN -MMD -MP -c $< -o $@

# The runner's suites are the rows of tests/book_order.h, in the book's order
# (BOOK_SUITE(name, chapter, stage)); tests/test_foo.c, which defines
# CU_TestInfo tests_foo[], is suite "foo". Every file needs its row and every
# row its file, once: make stops, naming what is missing, as it reads this file
# (so a suite is never left out of make test unnoticed). The runner's objects
# include the table, and are rebuilt when it changes.
BOOK_ROW_NAME := s/^BOOK_SUITE( *\([a-z0-9_]*\).*/\1/p
BOOK_SUITES   := $(shell sed -n '$(BOOK_ROW_NAME)' tests/book_order.h)
NOT_IN_BOOK   := $(filter-out $(BOOK_SUITES),$(TEST_SUITES))
NO_SUITE_FILE := $(filter-out $(TEST_SUITES),$(BOOK_SUITES))
BOOK_TWICE    := $(shell sed -n '$(BOOK_ROW_NAME)' tests/book_order.h | sort | uniq -d)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
  ifneq ($(NOT_IN_BOOK),)
    $(error $(NOT_IN_BOOK:%=tests/test_%.c) has no row in tests/book_order.h, the suites in the book's order: add a BOOK_SUITE(name, chapter, stage) line at its place)
  endif
  ifneq ($(NO_SUITE_FILE),)
    $(error tests/book_order.h has a row for suite $(NO_SUITE_FILE), but there is no $(NO_SUITE_FILE:%=tests/test_%.c))
  endif
  ifneq ($(BOOK_TWICE),)
    $(error tests/book_order.h has more than one row for suite $(BOOK_TWICE): keep one)
  endif
endif

$(BUILD)/tests/%.o: ALL_CFLAGS += -DVIT_TEST_DIR=\"$(CURDIR)/tests\"
$(TEST_OBJ): ALL_CFLAGS += $(TEST_OPT)
$(BUILD)/lib/io/labels.o: ALL_CFLAGS += -DVIT_DATA_DIR=\"$(CURDIR)/data\"
$(TEST_OBJ) $(CHAPTER_TOBJ) $(BUILD)/lib/io/labels.o: $(PATHS_FILE)

$(TEST_RUNNER): $(RUNNER_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $(RUNNER_OBJ) $(LIB) $(RUNNER_LIBS) -o $@

$(BUILD)/vit: $(VIT_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $^ $(ALL_LDLIBS) -o $@

$(BUILD)/bench: $(BENCH_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $^ $(ALL_LDLIBS) -o $@

# vitview --train reads vit train's flags with vit's own table (cli/train_command.c)
VIEWER_CLI_OBJ := $(BUILD)/cli/train_command.o $(BUILD)/cli/vit_cli.o
$(BUILD)/vitview: $(VIEWER_OBJ) $(VIEWER_CLI_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $^ $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw) $(ALL_LDLIBS) -o $@

# ----------------------------------------------------------------- targets
chapters: $(CHAPTER_BIN)
lib: $(LIB)

# lib's link graph (scripts/link-graph.sh, from nm of lib's objects): a file
# that uses another's symbols never also serves, directly or through others,
# one that file uses. A cycle fails, its files named; make test runs this first.
link-graph: $(LIB_OBJ)
	@scripts/link-graph.sh $(LIB_OBJ)

# lib's include graph (scripts/include-layers.sh, from the #include lines of
# lib/*/*.[ch]): lib is a folder per layer in the book's order (base, gemm, ops,
# attention, io, model, backward, train, explain, teach; the script holds the
# list), and a file includes only its own folder and the folders below it. An
# upward edge fails, its file, line and include named; make test runs this first.
include-layers:
	@scripts/include-layers.sh lib docs/modules.dox

# no test computes its expected value with the code under test
# (scripts/check-test-references.sh: the rule is in its header): each finding
# is named by file and line. Its self-test first, on a planted sample, so the
# check cannot pass by finding nothing; make test runs both.
test-references:
	@scripts/check-test-references.sh --self-test && scripts/check-test-references.sh tests lib

# run, test, sanitize and bench install packages first, then re-enter make so
# that the detection above sees what was just installed.
# make run opens vitview with its defaults: data/models/vit-fashion.safetensors
# (random weights, said so, when it is not there) on a shipped Fashion-MNIST test
# image, data/images/fashion-mnist/; neither the dataset nor a network is read.
# ARGS passes options on: make run ARGS='--weights W.safetensors cat.jpg'.
run: deps
	@$(MAKE) --no-print-directory all
	@$(BUILD)/vitview $(ARGS)

# the chapter programs one after another, their explanations on stdout
chapters-run: deps
	@$(MAKE) --no-print-directory all
	@for c in $(CHAPTER_BIN); do echo; echo "### $$c"; echo; $$c || exit 1; done

# make test builds and runs the exercise checks on every core even when make was
# called without -j: the README's one command should not take one core's time.
# One job more than the cores: a check spends part of its time starting
# processes and reading files, when a core would otherwise wait; and beside
# other programs that keep the cores busy, the kernel shares the cores out
# per process, so N + 1 jobs keep more of them than N.
NPROC    := $(shell nproc 2>/dev/null || echo 1)
PARALLEL  = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(shell expr $(NPROC) + 1))
# OpenMP's threads sleep while they wait for work (the runner says why), in
# every program the tests start, the viewer's too.
test sanitize: export OMP_WAIT_POLICY ?= passive
# Its wall time is printed last, from after the packages, against the line it
# must stay under (5 minutes on 2 cores): the runner prints each suite's.
# Each chapter's test against its golden (the whole chapter replayed: 22 s for
# chapter 12) runs in the exercise checks, where lib's code is graded against
# each exercise's key (one run, both the grader's reference and the answer it
# judges). The runner leaves it out here rather than run it a second time
# (`build/tests/run` alone runs every test).
GRADED_ELSEWHERE = --except 'ch*/chapter matches PyTorch golden'
#
# The viewer's checks in tmux (tests/viewer_tmux.sh) spend most of their time
# waiting for a screen to be drawn, not computing: they run beside the runner
# and the exercise checks, their report kept in $(BUILD)/viewer_tmux.log and
# printed when they end (a check that waits gives the viewer 5 s or more).
VIEWER_TMUX_LOG = $(BUILD)/viewer_tmux.log
#
# make test CH=NN runs only what must work by the end of chapter NN: the
# runner's suites of the stages down to that chapter's (lib's base, chapters 01
# to NN and the lib suites each teaches: build/tests/run --up-to NN) and the
# exercise checks of exercises 01 to NN. The later chapters, the programs'
# suites, the viewer's checks in tmux and the grader's own checks are left out.
# CH names a chapter as it names an exercise for make exercise: 5, 05,
# 05_multi_head or multi_head. TEST_CHAPTER is that chapter's NN_name (empty
# without CH, or for a CH that names none), CHAPTERS_TESTED those it keeps, TEST_CH_NN its number.
CHAPTERS        := $(patsubst chapters/%.c,%,$(CHAPTER_SRC))
TEST_CHAPTER    := $(if $(or $(findstring %,$(CH)),$(filter-out 1,$(words $(CH)))),,$(firstword \
                     $(filter $(CH) $(CH)_% 0$(CH)_% %_$(CH),$(CHAPTERS))))
up_to = $(if $(2),$(firstword $(2)) $(if $(filter $(1),$(firstword $(2))),,$(call up_to,$(1),$(wordlist 2,$(words $(2)),$(2)))))
CHAPTERS_TESTED := $(if $(CH),$(if $(TEST_CHAPTER),$(call up_to,$(TEST_CHAPTER),$(CHAPTERS))),$(CHAPTERS))
TEST_CH_NN      := $(firstword $(subst _, ,$(TEST_CHAPTER)))
TEST_UP_TO      := $(if $(TEST_CHAPTER),--up-to $(TEST_CH_NN))
test: export TEST_CH = $(CH)
test: deps
ifneq ($(CH),)
ifeq ($(TEST_CHAPTER),)
	@echo "make test: CH=$$TEST_CH names no chapter: give a chapter from 01 to $(firstword $(subst _, ,$(lastword $(CHAPTERS)))) (or its name, as in CH=05_multi_head)" >&2; exit 2
endif
endif
	@start=$$(date +%s); status=0; viewer=""; \
	{ $(MAKE) --no-print-directory $(PARALLEL) all && \
	  scripts/include-layers.sh lib docs/modules.dox && \
	  scripts/link-graph.sh $(LIB_OBJ) && \
	  scripts/check-test-references.sh --self-test && \
	  scripts/check-test-references.sh tests lib && \
	  { if [ -z "$(TEST_UP_TO)" ] && [ -x tests/viewer_tmux.sh ] && [ -x $(BUILD)/vitview ]; then \
	      tests/viewer_tmux.sh $(BUILD)/vitview >$(VIEWER_TMUX_LOG) 2>&1 & viewer=$$!; fi; } && \
	  $(TEST_RUNNER) $(GRADED_ELSEWHERE) $(TEST_UP_TO) && \
	  $(MAKE) --no-print-directory $(PARALLEL) exercise-checks; \
	} || status=$$?; \
	if [ -n "$$viewer" ]; then \
	  wait $$viewer || status=1; cat $(VIEWER_TMUX_LOG); \
	fi; \
	echo "make test$(if $(TEST_UP_TO), up to chapter $(TEST_CH_NN)): $$(($$(date +%s) - start)) s of wall time after the packages (it must stay under 300 s on 2 cores)$$([ $$status -eq 0 ] || echo ', and it FAILED')"; \
	exit $$status

# ---------------------------------------------------------------- exercises
# tests/exercises.sh compiles a student's .c files with this build's flags
# (less -Werror: a skeleton's unused variable is not an error), links them
# before $(LIB) with $(RUNNER_OBJ), and runs that runner's grade mode on the
# suites of exercises/NN_name/KEY (tests/grade.h). Outputs: $(BUILD)/exercises/NN/.
#
# What the script is told (the build's compiler, flags and objects, and the
# learner's CH, DIR, FORMAT, JSON and TIMEOUT) reaches it through its
# environment, which make fills itself (the exported variables below): no value
# is ever pasted into the text of a shell command, so a folder called "it's
# here", or even "x'; touch F; '", is only a name. The recipes name them as
# "$$EX_DIR", in double quotes. (A value is still make's to expand first: a
# $(...) in it is make's, as anywhere on make's command line.)
# EXERCISE_TARGETS is set after EXERCISE_CHECKS, below, and the exports follow it.

# make exercise CH=NN: grade one; make exercise: list them. SANITIZE=1 grades
# under AddressSanitizer + UBSan (build/sanitize, as make sanitize builds it):
# a write outside an array is caught even where it does not crash. CH and DIR
# reach that make through MAKEFLAGS, as every command-line variable does.
SAN_EXERCISE = $(MAKE) --no-print-directory BUILD=build/sanitize OPT=-O1 SANITIZE=0 \
               EXTRA_CFLAGS="$(SAN_FLAGS)" EXTRA_LDFLAGS="$(SAN_FLAGS)" TIMEOUT="$${EX_TIMEOUT:-120}"
exercise: deps
ifeq ($(strip $(CH)),)
	@tests/exercises.sh list
else ifeq ($(SANITIZE),1)
	@$(SAN_EXERCISE) exercise
else
	@$(MAKE) --no-print-directory all
	@tests/exercises.sh grade "$$EX_CH" "$$EX_DIR"
endif

# make grade-class CH=NN SUBMISSIONS=DIR [OUT=dir] [JOBS=n]: every student folder
# of DIR graded (an LMS bulk download: one folder per student, any names), JOBS
# at a time, into OUT (default build/class/NN_name): gradebook.csv, results/*.json
grade-class: deps
	@$(MAKE) --no-print-directory all
	@tests/exercises.sh class "$$EX_CH" "$$EX_SUBMISSIONS" "$$EX_OUT"

exercise-all: deps
ifeq ($(SANITIZE),1)
	@$(SAN_EXERCISE) exercise-all
else
	@$(MAKE) --no-print-directory all
	@tests/exercises.sh all "$$EX_DIR"
endif

# make test proves every exercise, both ways, one case per target (make -j
# runs them side by side): lib's reference passes its key, the skeleton as
# committed compiles and fails it, each wrong implementation fails it and the
# grader's output holds its '// hint:' text (tried first without the key's slow
# chapter-against-golden tests: a failure there is a failure of the whole key);
# and tests/grader/*.c prove that
# the grader survives a crash, an endless loop, exit() and a compile error;
# exercise-check/quoting runs make exercise itself with a DIR, a JSON and a CH
# that would run commands if they were pasted into the shell, and proves none ran.
#
# make -j starts them in this order, so the longest come first and the short
# ones fill the cores at the end: the later chapters' keys (chapter 12's runs
# its whole chapter, ~30 s), make exercise and the class, the skeletons, the
# wrong files from the last chapter back, the grader's checks, the promises.
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
EXERCISE_CHECKS := $(call reverse,$(EXERCISES:%=exercise-check/key/%)) \
                   $(if $(EXERCISES),exercise-check/quoting exercise-check/class) \
                   $(call reverse,$(EXERCISES:%=exercise-check/skeleton/%)) \
                   $(call reverse,$(WRONG_SRC:tests/wrong/%=exercise-check/wrong/%)) \
                   $(GRADER_CHECK_SRC:tests/grader/%=exercise-check/grader/%) \
                   $(EXERCISES:%=exercise-check/promised/%)

# make stage-checks: each wrong implementation of tests/wrong/, in lib's place, fails
# first at its own chapter's stage in the runner as make test CH=NN runs it, the
# chapters' goldens included (tests/exercises.sh check-stage). Every suite down to
# the file's chapter, for each of the 218 files: too long for make test.
STAGE_CHECKS := $(WRONG_SRC:tests/wrong/%=stage-check/%)

# the model answers (tests/answers/NN_name/): each passes every suite (make answers-check)
ANSWER_DIRS   := $(sort $(patsubst %/,%,$(dir $(wildcard tests/answers/*/*.c))))
ANSWER_CHECKS := $(ANSWER_DIRS:tests/answers/%=answer-check/%)

# the environment of tests/exercises.sh (see above): the same for every rule that runs it
EXERCISE_TARGETS := exercise exercise-all grade-class $(EXERCISE_CHECKS) $(ANSWER_CHECKS) \
                    $(STAGE_CHECKS)
$(EXERCISE_TARGETS): export BUILD := $(BUILD)
$(EXERCISE_TARGETS): export EX_CC = $(CC)
# A student's file is compiled at -O2 where lib is at -O3: the same bits (see
# OPT), in a third of the time (0.12 s against 0.35 s for a file of exercise 10,
# and make test compiles 237 of them).
$(EXERCISE_TARGETS): export EX_CFLAGS = $(patsubst -O3,-O2,$(filter-out -Werror,$(ALL_CFLAGS)))
$(EXERCISE_TARGETS): export EX_OBJS = $(RUNNER_OBJ)
$(EXERCISE_TARGETS): export EX_LIB = $(LIB)
$(EXERCISE_TARGETS): export EX_LIBS = $(RUNNER_LIBS)
$(EXERCISE_TARGETS): export EX_RUNNER = $(TEST_RUNNER)
$(EXERCISE_TARGETS): export EX_FORMAT = $(FORMAT)
$(EXERCISE_TARGETS): export EX_JSON = $(JSON)
$(EXERCISE_TARGETS): export EX_TIMEOUT = $(TIMEOUT)
$(EXERCISE_TARGETS): export EX_CH = $(CH)
$(EXERCISE_TARGETS): export EX_DIR = $(DIR)
$(EXERCISE_TARGETS): export EX_SUBMISSIONS = $(SUBMISSIONS)
$(EXERCISE_TARGETS): export EX_OUT = $(OUT)
$(EXERCISE_TARGETS): export EX_JOBS = $(JOBS)
$(EXERCISE_TARGETS): export EX_POINTS = $(POINTS)
$(EXERCISE_TARGETS): export EX_VISIBILITY = $(VISIBILITY)
# under make -j the cases run side by side: one OpenMP thread each, or
# their spinning threads fight over the cores (twice as slow on two)
CHECK_ENV = $(if $(findstring jobserver,$(MAKEFLAGS)),OMP_NUM_THREADS=1)
# make test CH=NN: the checks of exercises 01 to NN only (their keys, skeletons,
# wrong implementations and promises), none of the grader's own
CHECKS_TESTED := $(if $(CH),$(filter $(foreach e,$(filter $(CHAPTERS_TESTED),$(EXERCISES)),exercise-check/key/$(e) \
                   exercise-check/skeleton/$(e) exercise-check/wrong/$(e)/% exercise-check/promised/$(e)),$(EXERCISE_CHECKS)),$(EXERCISE_CHECKS))
.PHONY: $(EXERCISE_CHECKS)
exercise-checks: $(CHECKS_TESTED)
ifeq ($(CH),)
	@echo "exercises: $(words $(EXERCISES)) exercises (each README's hints shown), $(words $(WRONG_SRC)) wrong implementations, $(words $(GRADER_CHECK_SRC)) grader checks, make exercise's quoting and a class passed"
else
	@echo "exercises up to chapter $(TEST_CH_NN): $(words $(filter exercise-check/key/%,$(CHECKS_TESTED))) exercises (each README's hints shown) and $(words $(filter exercise-check/wrong/%,$(CHECKS_TESTED))) wrong implementations passed; the grader's own checks left out (make test without CH runs them)"
endif
$(filter exercise-check/key/%,$(EXERCISE_CHECKS)): exercise-check/key/%: $(TEST_RUNNER)
	@$(CHECK_ENV) tests/exercises.sh check-key $*
# (after its key's check, which makes lib's records of the key's tests: run side by
# side, both made them, chapter 11's replayed twice)
$(filter exercise-check/skeleton/%,$(EXERCISE_CHECKS)): exercise-check/skeleton/%: $(TEST_RUNNER) exercise-check/key/%
	@$(CHECK_ENV) tests/exercises.sh check-skeleton $*
$(filter exercise-check/promised/%,$(EXERCISE_CHECKS)): exercise-check/promised/%:
	@tests/exercises.sh check-promised $*
$(filter exercise-check/wrong/%,$(EXERCISE_CHECKS)): exercise-check/wrong/%: $(TEST_RUNNER)
	@$(CHECK_ENV) tests/exercises.sh check-wrong tests/wrong/$*
$(filter exercise-check/grader/%,$(EXERCISE_CHECKS)): exercise-check/grader/%: $(TEST_RUNNER)
	@$(CHECK_ENV) tests/exercises.sh check-wrong tests/grader/$*
.PHONY: stage-checks $(STAGE_CHECKS)
stage-checks: $(STAGE_CHECKS)
	@echo "stage checks: the $(words $(STAGE_CHECKS)) wrong implementations each fail first at their own stage (or at the compiler)"
$(STAGE_CHECKS): stage-check/%: $(TEST_RUNNER)
	@$(CHECK_ENV) tests/exercises.sh check-stage tests/wrong/$*
.PHONY: answers-check $(ANSWER_CHECKS)
answers-check: $(ANSWER_CHECKS)
	@echo "answers: $(words $(ANSWER_CHECKS)) model answers pass every suite and get full marks"
$(ANSWER_CHECKS): answer-check/%: all $(TEST_RUNNER)
	@$(CHECK_ENV) tests/exercises.sh check-answer tests/answers/$*
exercise-check/class: $(TEST_RUNNER)
	@$(CHECK_ENV) tests/exercises.sh check-class $(firstword $(EXERCISES))
# it runs make exercise, which builds all first: built here, before the checks
# run side by side ('+': that make shares this one's jobs, as $(MAKE) would)
exercise-check/quoting: export EX_MAKE = $(MAKE)
exercise-check/quoting: all
	+@$(CHECK_ENV) tests/exercises.sh check-quoting $(firstword $(EXERCISES))

SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
sanitize: deps
	@$(MAKE) --no-print-directory BUILD=build/sanitize OPT=-O1 \
	    EXTRA_CFLAGS="$(SAN_FLAGS)" EXTRA_LDFLAGS="$(SAN_FLAGS)" all
	@# (the sanitizers make a suite several times slower: a longer time limit per suite)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    VIT_SANITIZE=1 VIT_TEST_TIMEOUT=$${VIT_TEST_TIMEOUT:-3600} build/sanitize/tests/run
	@# the grader's own side too: a process per test, the pipes, results.json
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    VIT_SANITIZE=1 build/sanitize/tests/run --grade --json build/sanitize/grade.json \
	    ch01_dot_product ch03_softmax hints >build/sanitize/grade.txt 2>&1 || \
	    { cat build/sanitize/grade.txt; echo "sanitize: the grade mode failed" >&2; exit 1; }
	@tail -n 1 build/sanitize/grade.txt | sed 's/^/grade mode: /'
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    tests/viewer_tmux.sh build/sanitize/vitview

# libFuzzer targets (clang) for the safetensors/weights parser and the image
# loader, run FUZZ_SECONDS each on a corpus grown from tests/fuzz/seeds/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := safetensors image
FUZZ_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
fuzz:
	@./scripts/deps.sh clang libclang-rt-14-dev
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang NO_OMP=1 BLAS=0 OPT=-O1 \
	    EXTRA_CFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" lib
	@for t in $(FUZZ_TARGETS); do \
	    clang $(CPPFLAGS_BASE) -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) \
	        tests/fuzz/fuzz_$$t.c $$([ $$t = image ] && echo tests/fuzz/stb_image_impl.c) \
	        build/fuzz/libvit.a $(LDLIBS_BASE) -o build/fuzz/fuzz_$$t || exit 1; \
	done
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p build/fuzz/corpus-$$t; \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -print_final_stats=1 \
	        -artifact_prefix=build/fuzz/crash-$$t- build/fuzz/corpus-$$t tests/fuzz/seeds/$$t \
	        2>build/fuzz/$$t.log || { tail -40 build/fuzz/$$t.log; exit 1; }; \
	    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build/fuzz/$$t.log; \
	done

docs: deps
	@./scripts/deps.sh gnuplot-nox aha
	@./scripts/docs.sh

# The book as a reader's browser shows it: the main page, every chapter page and
# the viewer page opened in headless Chromium (scripts/docs-check.sh), which
# fails on a formula left as TeX, a missing picture, a broken link or anchor
# (the navigation tree's too) or "snippet not found", and on a number in a
# chapter page's prose that the chapter's output does not print
# (scripts/docs-numbers.sh, proved by its --self-test); screenshots land in
# build/docs/check/screens/.
docs-check: docs
	@./scripts/deps.sh chromium
	@./scripts/docs-check.sh

# The C benchmarks (and what watching a training run costs:
# benchmarks/watch_cost.sh, vit train against vitview --train), then PyTorch
# doing the same work beside the C figures, when
# Debian's Python has torch (dev-time Python; else said so): torchvision's
# vit_b_16 at its best thread setting (tools/bench_torch_vit.py) and the same
# training step (tools/bench_torch_train.py); last, the forward beside other
# work, ours and PyTorch's under the same load (benchmarks/shared.sh).
BENCH_TRAIN := $(BUILD)/bench-train.txt
BENCH_VIT   := $(BUILD)/bench-vit.txt
bench: deps
	@$(MAKE) --no-print-directory all
	@rm -f $(BENCH_TRAIN) $(BENCH_VIT)
	@$(BENCH_BIN) --train-result $(BENCH_TRAIN) --vit-result $(BENCH_VIT)
	@echo
	@benchmarks/watch_cost.sh $(BUILD)
	@if $(PYTHON) -c 'import torch, torchvision' 2>/dev/null; then \
	    echo "PyTorch: ViT-B/16, torchvision's vit_b_16, in $(PYTHON)"; \
	    PYTHONDONTWRITEBYTECODE=1 $(PYTHON) tools/bench_torch_vit.py --c-result $(BENCH_VIT); \
	    echo; \
	    echo "PyTorch: the training step of the train section, in $(PYTHON) with torch"; \
	    PYTHONDONTWRITEBYTECODE=1 $(PYTHON) tools/bench_torch_train.py --c-result $(BENCH_TRAIN); \
	else \
	    echo "PyTorch: skipped, $(PYTHON) has no torch and torchvision (apt-get install python3-torch python3-torchvision to compare)"; \
	fi
	@echo
	@benchmarks/shared.sh $(BUILD) $(PYTHON)

# ------------------------------------------------------------------ goldens
# Every tools/gen_golden*.py, one after another, with Debian's Python and
# PyTorch; no network. They need the vit program (make-weights draws the
# models' weights). GOLDEN_DIR=dir writes the goldens (and the test images
# they draw) into dir instead of tests/golden (and tests/data); either way
# tools/compare_goldens.py then says which files changed and by how much, against
# the committed files (GOLDEN_DIR) or the files as they were before (in place):
# each tensor that differs, its largest difference and how much of its tolerance
# that is, and where the old and the new file were made (their "cpu" and "isa").
PYTHON         ?= /usr/bin/python3
GOLDEN_DIR     ?= tests/golden
GOLDEN_SCRIPTS := $(sort $(wildcard tools/gen_golden*.py))
GOLDEN_OUT     := $(if $(filter $(abspath tests/golden),$(abspath $(GOLDEN_DIR))),,--out-dir $(abspath $(GOLDEN_DIR)))
GOLDEN_NOTE    := goldens made on another CPU or with another PyTorch version may differ \
                  in the last bit (above: by how much, within or beyond each tolerance); what matters is that make test passes
goldens: $(BUILD)/vit
	@$(PYTHON) -c 'import torch, torchvision, PIL' 2>/dev/null || { echo "goldens: $(PYTHON) needs \
	    PyTorch, torchvision and Pillow: apt-get install python3-torch python3-torchvision python3-pil" >&2; \
	    exit 1; }
	@echo "goldens: $(words $(GOLDEN_SCRIPTS)) scripts, $(PYTHON), torch $$($(PYTHON) -c 'import torch; print(torch.__version__)') -> $(GOLDEN_DIR)/"
	@failed=""; before=""; \
	if [ -z "$(GOLDEN_OUT)" ]; then \
	    before=$$(mktemp -d) && mkdir $$before/golden $$before/data && \
	    find tests/golden -maxdepth 1 -type f -exec cp -p {} $$before/golden \; && \
	    find tests/data -maxdepth 1 -type f -exec cp -p {} $$before/data \; || exit 1; \
	    trap 'rm -rf "$$before"' EXIT; \
	fi; \
	for s in $(GOLDEN_SCRIPTS); do \
	    echo "== $$s"; \
	    VIT_BIN=$(abspath $(BUILD)/vit) PYTHONDONTWRITEBYTECODE=1 $(PYTHON) $$s $(GOLDEN_OUT) \
	        || failed="$$failed $$s"; \
	done; \
	if [ -n "$(GOLDEN_OUT)" ]; then \
	    echo "== $(GOLDEN_DIR)/ against the committed files"; \
	    PYTHONDONTWRITEBYTECODE=1 $(PYTHON) tools/compare_goldens.py $(GOLDEN_DIR); \
	else \
	    echo "== tests/golden/ and tests/data/ against the files they replaced"; \
	    PYTHONDONTWRITEBYTECODE=1 $(PYTHON) tools/compare_goldens.py \
	        --old $$before/golden --old $$before/data tests/golden tests/data; \
	fi; \
	[ $$? -le 1 ] || failed="$$failed tools/compare_goldens.py"; \
	echo "goldens: note: $(GOLDEN_NOTE)"; \
	if [ -n "$$failed" ]; then \
	    echo "goldens: FAILED:$$failed$(if $(GOLDEN_OUT), (does each take --out-dir DIR?))" >&2; \
	    exit 1; \
	fi

clean:
	rm -rf build docs/html

-include $(ALL_OBJ:.o=.d)
