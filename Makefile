# rtmem: the two commands of the README, and the builds CI runs.
#   make bench   build everything, run the benchmark report, memcheck, wcet, latency
#                (idle, noise, under memory pressure, a quick sweep), pressure, stride,
#                bw and shm, the example control loop traced, replayed and run on the
#                heap the replay advised and on glibc-rt, and the
#                pool bounds of rtmem size (results/), with jemalloc, mimalloc and tcmalloc beside
#                rtmem's heaps and valgrind's counts in wcet when installable; it ends
#                with the report: results/report/index.html, plots and tables of it all
#   make report  the report again from the result files in results/
#   make sweep   the full study of latency under memory pressure (about 10 minutes)
#   make study   the page-heap study: time against request size with spread, memory
#                held over a churn, every kind, glibc and the peers (docs/pages.md)
#   make test    build everything and run every test
#   make format  lay out the C sources as .clang-format says (clang-format 19);
#                make format-check only checks (CI's first step)
#   make compare-cyclictest  rtmem latency beside cyclictest, idle and under
#                pressure (scripts/compare-cyclictest.sh; not part of bench)
#   make compare-run  real programs on glibc, glibc-rt and each kind through
#                rtmem run, and the interposer's cost (scripts/compare-run.py)
#   make speed   rtmem's heaps against rlsf (cargo, crates.io) and their own
#                unchecked rows, side by side (scripts/speed.py; not part of bench)
#   make test-rust  the Rust crates' tests (bindings/rust; cargo from rustup or Debian)
#   make bench-cpp, make bench-rust  C++ pmr and Rust global-allocator workloads on each
#                kind against the default allocator (docs/cpp.md, docs/rust.md)
#   make figures three runs of make bench (and two studies), then every figure the
#                README and docs/ quote rewritten from them (docs/figures.md)
# Each installs what it needs first (scripts/ensure-deps.sh, idempotent).

BUILD   ?= build
JOBS    ?= 2
RESULTS ?= results
CMAKE_FLAGS ?=

.PHONY: all deps build test bench study report sweep cross test-cross test-i686 test-asan coverage test-clang test-ubsan test-tsan fuzz-build fuzz fuzz-merge install deb deb-cross \
        clean \
        format format-check compare-cyclictest compare-run speed figures test-rust bench-cpp bench-rust

all: build

deps:
	@sh scripts/ensure-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# A JDK, valgrind, matplotlib (in .venv/) and chromium too (optional: without
# them, rtmem shm --java's tests, rtmem wcet's counts and tools.report's plots
# and browser check say they were skipped).
test: build
	@sh scripts/ensure-deps.sh java valgrind report chromium
	@sh scripts/build-rpmalloc.sh $(BUILD)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every tracked *.c and *.h of src/ include/ tests/ examples/ tools/, with
# clang-format 19 only (installed by the script through ensure-deps.sh format):
# another major version lays the same code out differently.
format:
	@sh scripts/format-check.sh --fix

format-check:
	@sh scripts/format-check.sh

# memcheck compares rtmem's heaps with jemalloc, mimalloc and tcmalloc: the
# `peers` extra installs them if it can, and the run goes on without them if
# not; and with rpmalloc, built with cargo into $(BUILD)/peers/ when cargo
# is there (scripts/build-rpmalloc.sh: skipped with a note when not).
bench: build
	@sh scripts/ensure-deps.sh peers valgrind java report
	@sh scripts/build-rpmalloc.sh $(BUILD)
	@# scripts/bench.sh runs every tool and the report: the same script an
	@# installed rtmem runs on a board (<prefix>/share/rtmem/bench.sh)
	@RTMEM=$(BUILD)/tools/rtmem RTMEM_CONTROL_LOOP=$(BUILD)/examples/control_loop \
	    sh scripts/bench.sh $(RESULTS)

# The page-heap study (docs/pages.md): alloc+free time against request size
# (64-byte buckets, and 1 KiB ranges run 20 times with their spread) for every
# kind, glibc and the peers; memory held against used over a churn; the report.
# Into $(RESULTS)/study/, in about a minute.
study: build
	@sh scripts/ensure-deps.sh peers report
	@sh scripts/build-rpmalloc.sh $(BUILD)
	@RTMEM=$(BUILD)/tools/rtmem sh scripts/study.sh $(RESULTS)/study

# The report alone, from the result files already in $(RESULTS)/ (make bench
# ends with it): plots and one page, $(RESULTS)/report/index.html. matplotlib
# is installed first, pinned, into the project's .venv/.
report: build
	@sh scripts/ensure-deps.sh report
	$(BUILD)/tools/rtmem report $(RESULTS) -o $(RESULTS)/report

# The study of latency under memory pressure on its defaults: an idle baseline, then
# 2 vm workers at every size (4M to 1G), stride (1 to 4096) and mode (plain, keep,
# hang), 4 s each: about 10 minutes, one JSON.
sweep: build
	@mkdir -p $(RESULTS)
	$(BUILD)/tools/rtmem latency --sweep --json $(RESULTS)/latency-sweep-full.json \
	    > $(RESULTS)/latency-sweep-full.txt; status=$$?; cat $(RESULTS)/latency-sweep-full.txt; \
	    exit $$status

# rtmem latency and cyclictest (rt-tests, installed if missing) run alternately
# on the same CPU, period and priority, idle and under the same pressure; a
# table of both and whether their medians agree. About 90 s; root.
# COMPARE_FLAGS goes to the script (--duration, --period, --prio, --cpu,
# --runs, --bytes).
COMPARE_FLAGS ?=
compare-cyclictest: build
	RTMEM=$(BUILD)/tools/rtmem sh scripts/compare-cyclictest.sh $(COMPARE_FLAGS)

# rtmem's heaps against rlsf (a TLSF in Rust, built by cargo from crates.io
# into a heap plugin: peers/rlsf) and against their own unchecked rows, side by
# side in SPEED_RUNS runs of bench's main phase (about 10 s each):
# results/speed.txt and .json (docs/speed.md). SPEED_FLAGS adds --plugin FILE.so.
SPEED_RUNS ?= 3
speed: build
	python3 scripts/speed.py --build $(BUILD) --runs $(SPEED_RUNS) --out $(RESULTS) $(SPEED_FLAGS)

# The Rust crates' tests (bindings/rust: cargo test; scripts/rust.sh), and
# again against make test-asan's library when it is built (CI).
test-rust:
	@if [ -e $(BUILD)-asan/librtmem.a ]; then \
	    RTMEM_ASAN_LIB_DIR=$(CURDIR)/$(BUILD)-asan sh scripts/rust.sh test; \
	else sh scripts/rust.sh test; fi

# A std::pmr workload on each kind against the default resource
# (examples/cpp/pmr_bench.cpp; docs/cpp.md), and a Vec/BTreeMap workload with
# rtmem as Rust's global allocator against the system's (docs/rust.md).
BENCH_ROUNDS ?= 300
bench-cpp: build
	c++ -std=c++17 -O2 -Wall -Wextra -Werror -I include -o $(BUILD)/pmr_bench \
	    examples/cpp/pmr_bench.cpp $(BUILD)/librtmem.a -lpthread
	$(BUILD)/pmr_bench $(BENCH_ROUNDS)

bench-rust:
	sh scripts/rust.sh bench $(BENCH_ROUNDS)

# Real programs (sqlite3, python3) through rtmem run on glibc, glibc-rt and each
# kind, and the interposer's instructions a call under valgrind (about two
# minutes): results/compare-run.txt and .json.
compare-run: build
	@sh scripts/ensure-deps.sh valgrind
	python3 scripts/compare-run.py --build $(BUILD) --out $(RESULTS)

# Every figure README.md and docs/ quote, regenerated: FIGURE_RUNS runs of make
# bench and the two studies the pages quote (results/figures-<time>/), then the
# pages' figure markers rewritten from them (scripts/figures, docs/figures.md).
# About three make bench long; on a quiet machine.
FIGURE_RUNS ?= 3
figures: build
	python3 scripts/figures run --runs $(FIGURE_RUNS) --build $(BUILD)

# The library, the tools and the tests cross-built for arm64 and 32-bit ARM
# (armv7, hard-float) with Debian's cross compilers (installed on demand) and
# the toolchain files in cmake/, warnings as errors as everywhere:
# build-arm64/, build-armv7/. docs/targets.md says how to run their tests
# under qemu-user.
cross:
	@sh scripts/ensure-deps.sh cross
	cmake -S . -B $(BUILD)-arm64 --toolchain cmake/toolchain-aarch64-linux-gnu.cmake \
	    -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)-arm64 -j $(JOBS)
	cmake -S . -B $(BUILD)-armv7 --toolchain cmake/toolchain-arm-linux-gnueabihf.cmake \
	    -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)-armv7 -j $(JOBS)

# Every test of the cross builds under qemu-user (scripts/test-cross.sh):
# CTest starts each test program under qemu (the toolchain files name it),
# and binfmt_misc hands qemu the target programs the tests start themselves
# (set up as root, and undone after). The tests check behaviour only: timings
# under emulation mean nothing. Those that qemu-user cannot support skip
# themselves saying why (robust futexes, the kernel's view of a mapping,
# valgrind's counts, terabytes of address space); the model runs 100000
# operations per configuration, the undo log 500 and fuzz_replay 200
# generated inputs. RTMEM_CROSS_TESTS=REGEX runs only the tests it
# matches; RTMEM_CROSS_PYTEST="arm64 armv7" (the default) names the targets
# that run the rtmem command's end-to-end tests (CI: armv7). docs/targets.md
# has the list.
test-cross: cross
	@sh scripts/ensure-deps.sh qemu
	sh scripts/test-cross.sh $(BUILD) $(JOBS)

# 32-bit x86 (i686): built with Debian's cross compilers, wrapped so that its
# programs run as they are on this x86-64 kernel (cmake/i686-linux-gnu-cc),
# and every test run natively, on the real kernel: robust futexes, /proc
# and page faults are the program's own, unlike under qemu-user. Not in CI
# (its time budget); docs/targets.md.
test-i686:
	@sh scripts/ensure-deps.sh i686
	cmake -S . -B $(BUILD)-i686 --toolchain cmake/toolchain-i686-linux-gnu.cmake \
	    -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)-i686 -j $(JOBS)
	cd $(BUILD)-i686 && ctest --output-on-failure -j $(JOBS) --timeout 900

# The same tests under AddressSanitizer + UndefinedBehaviorSanitizer, with
# the library's line coverage counted (gcc --coverage) and held to its floor:
# make coverage prints it per file (scripts/coverage.py; the floor, a
# percentage, in scripts/coverage-floor: raise it as tests are added, never
# lower it to let a change in).
test-asan: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTMEM_SANITIZE=ON -DRTMEM_DEBUG=ON \
	    -DRTMEM_COVERAGE=ON >/dev/null
	cmake --build $(BUILD)-asan -j $(JOBS)
	find $(BUILD)-asan -name '*.gcda' -delete
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory coverage

# The line coverage of src/ from the last make test-asan (above).
coverage:
	python3 scripts/coverage.py $(BUILD)-asan

# Everything built with clang (warnings as errors), and its tests but the
# rtmem command's end-to-end ones (labelled pytest): those run in the clang
# build of test-ubsan, and in every gcc build.
test-clang:
	@sh scripts/ensure-deps.sh clang
	CC=clang cmake -S . -B $(BUILD)-clang -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)-clang -j $(JOBS)
	cd $(BUILD)-clang && ctest --output-on-failure -j $(JOBS) -LE pytest

# The same tests built with clang's UndefinedBehaviorSanitizer, pointer-overflow
# named (pointer arithmetic that wraps around is undefined even when the result
# is never dereferenced); any report fails the run.
test-ubsan:
	@sh scripts/ensure-deps.sh sanitizers
	CC=clang cmake -S . -B $(BUILD)-ubsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTMEM_SANITIZE=ON -DRTMEM_DEBUG=ON \
	    -DRTMEM_SANITIZERS=undefined,pointer-overflow >/dev/null
	cmake --build $(BUILD)-ubsan -j $(JOBS)
	cd $(BUILD)-ubsan && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --output-on-failure -j $(JOBS)

# The tests of locked and shared heaps built with clang's ThreadSanitizer;
# any report fails the run. ctest -R lock: threads sharing a heap, owner
# death, priority inheritance, the threads phase of rtmem bench. ctest -R
# shared: threads sharing one
# handle, and the process tests (TSan watches each process on its own:
# a forked child halts with a report too, and its exit status fails its
# section). Left out: lock.undo, lock.conformance.*, shared.owners and
# shared.kill.*, single-threaded programs (TSan sees races between the
# threads of one process) that take minutes under it; make test and make
# test-asan run them. Only the programs run are built.
# tests/tsan.supp names the one report that is no race of rtmem's (TLSF's
# free reading a live neighbour's last word, and throwing it away).
test-tsan:
	@sh scripts/ensure-deps.sh sanitizers
	CC=clang cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTMEM_SANITIZE=ON -DRTMEM_DEBUG=ON \
	    -DRTMEM_SANITIZERS=thread -DRTMEM_BUILD_TOOLS=ON >/dev/null
	cmake --build $(BUILD)-tsan -j $(JOBS) --target lock_test rtmem shared_test
	cd $(BUILD)-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	    ctest --output-on-failure -j $(JOBS) -R '^(lock|shared)\.' \
	    -E '^(lock\.undo|lock\.conformance\..*|shared\.(owners|kill\..*))$$'

# Coverage-guided fuzzing with libFuzzer (clang). The library is instrumented
# as well as the fuzz target (coverage, ASan, UBSan), so libFuzzer learns from
# the allocators' branches. A run starts from tests/fuzz_corpus and writes the
# inputs it finds to $(BUILD)-fuzz/corpus, kept from run to run; `make
# fuzz-merge` minimises those and tests/fuzz_corpus/merged into the latter
# (commit it: the next runs, CI's included, start from it; a merge leaves out
# the inputs that crash, so merge where make fuzz runs clean). FUZZ_SECONDS
# bounds a run, FUZZ_JOBS fuzzing processes at once (libFuzzer -fork: one
# per CPU of JOBS; 1 runs the fuzzer in this process, without forking);
# FUZZ_RUNS (with FUZZ_JOBS=1) ends it after that many inputs instead, for
# a run beside other work (CI) that must not lose inputs to it;
# FUZZ_CMAKE_FLAGS is passed to cmake (for example
# -DRTMEM_FUZZ_SANITIZE_FLAGS=... to change the sanitizers).
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= $(JOBS)
FUZZ_RUNS ?=
FUZZ_CMAKE_FLAGS ?=
FUZZER = $(BUILD)-fuzz/tests/fuzz_heap_libfuzzer
fuzz-build:
	@sh scripts/ensure-deps.sh fuzz
	CC=clang cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTMEM_FUZZ=ON \
	    -DRTMEM_BUILD_TOOLS=OFF $(FUZZ_CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_heap_libfuzzer
	@mkdir -p $(BUILD)-fuzz/corpus tests/fuzz_corpus/merged

fuzz: fuzz-build
	$(FUZZER) $(if $(filter-out 0 1,$(FUZZ_JOBS)),-fork=$(FUZZ_JOBS)) $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS)) \
	    -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=4096 -artifact_prefix=$(BUILD)-fuzz/ $(BUILD)-fuzz/corpus tests/fuzz_corpus

fuzz-merge: fuzz-build
	rm -rf $(BUILD)-fuzz/merged && mkdir $(BUILD)-fuzz/merged
	$(FUZZER) -merge=1 -max_len=4096 -artifact_prefix=$(BUILD)-fuzz/ \
	    $(BUILD)-fuzz/merged tests/fuzz_corpus/merged $(BUILD)-fuzz/corpus
	rm -rf tests/fuzz_corpus/merged && cp -R $(BUILD)-fuzz/merged tests/fuzz_corpus/merged
	@echo "tests/fuzz_corpus/merged: $$(ls tests/fuzz_corpus/merged | wc -l) inputs," \
	    "$$(cat tests/fuzz_corpus/merged/* | wc -c) bytes"

PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Debian packages of the build (apt install ./packages/rtmem_*_amd64.deb), and of
# the cross builds for arm64 and armhf (docs/install.md); into packages/.
deb: build
	@mkdir -p packages
	cd $(BUILD) && cpack -G DEB -B $(abspath packages) >/dev/null
	@rm -rf packages/_CPack_Packages; ls packages/rtmem_*.deb
deb-cross: cross
	@mkdir -p packages
	cd $(BUILD)-arm64 && cpack -G DEB -B $(abspath packages) >/dev/null
	cd $(BUILD)-armv7 && cpack -G DEB -B $(abspath packages) >/dev/null
	@rm -rf packages/_CPack_Packages; ls packages/rtmem_*.deb

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-clang $(BUILD)-ubsan $(BUILD)-tsan $(BUILD)-fuzz
