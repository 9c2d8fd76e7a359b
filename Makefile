# lc: long-context summarization as Unix pipelines.
#
# Targets:
#   all          (default) build the programs into $(O)/bin and liblc into $(O)
#   deps         install the Debian packages lc needs (as root), else print the command
#   check        build, run the unit tests (tests/unit), the pipeline tests
#                (tests/sh) and mandoc -Tlint on the man pages, TEST_JOBS at a time
#                (default: one a processor; logs in $(O)/log); the last line is
#                "N passed, N failed" and the exit status is non-zero on failure
#   check-asan   the same, built in build-asan/ with AddressSanitizer and UBSan
#   check-cuda   on a machine with an NVIDIA GPU: a CUDA=1 build in build-cuda/ and the
#                unit tests and oracle goldens with every product on the GPU; elsewhere
#                it says "skipped: no GPU"
#   fuzz         build the fuzz targets (tests/fuzz) with libFuzzer and run each briefly
#                (FUZZ_SECONDS, default 20)
#   bench        run the benchmarks in bench/ (prints numbers, asserts nothing;
#                BENCH=NAME: bench/NAME.sh alone, e.g. BENCH=speed)
#   demo         run the pipeline on the bundled sample text
#   install      programs, man pages and share/ files under $(DESTDIR)$(PREFIX); copies
#                what `make` built into $(O)/bin and rebuilds nothing for its PREFIX
#   uninstall    remove what install put there
#   tokenizer    retrain share/spiece.model from text on this machine (see share/README)
#   gsg-data     text corpus -> tokenized GSG training pairs: CORPUS (file, archive or
#                directory; default the bundled KJV), GSG_CUT (PCRE2 pattern cutting
#                documents first, e.g. chapters; empty: no cut), GSG_FLAGS, GSG_OUT
#   span-data    text corpus -> tokenized span-corruption pairs (BART-LS / T5 denoising
#                pretraining, lc-noise): CORPUS (as for gsg-data), SPAN_CUT (PCRE2 pattern
#                cutting documents first; default '^CHAPTER [0-9]+' for the bundled KJV,
#                else empty: no cut), MODEL (its tokenizer; default share/models/demo:
#                the bundled spiece.model, T5's <extra_id_N> sentinels; a BART model
#                directory gives the BART-LS layout), SPAN_FLAGS (lc-noise options;
#                default the BART-LS values -r 0.0625 -l 3 --seed 3), SPAN_OUT (default
#                $(O)/span-pairs.lc)
#   summaries    summarize CORPUS (as for gsg-data, or JSON Lines: *.jsonl[.gz|...], each
#                line's SUM_TEXT field (default text) a document named by its SUM_ID
#                (default id)) into SUMMARIES (an lc
#                stream, default $(O)/summaries.lc; lc-cat -o text or -o jsonl prints
#                it, lc-rouge --jsonl scores it): SUM_CUT (PCRE2 pattern cutting documents first;
#                default '^BOOK [0-9A-Z]' for the bundled KJV, else empty: no cut), MODEL
#                (default share/models/demo), SUM_FLAGS (lc-decode options; default none:
#                the model's generation_config.json). HOSTS=FILE
#                (GNU parallel's --sshloginfile: a host a line, one job at a time on
#                each unless written N/host) spreads the work over those hosts in
#                SHARDS pieces (default 16), with the same result (see lc(7))
#   book-summary summarize a whole book as Pang et al. do (chapters, then their summaries
#                concatenated): BOOK (default share/samples/sample.txt), MODEL (default
#                share/models/demo), CHAPTER_CUT (PCRE2 pattern cutting chapters; default
#                '^CHAPTER [0-9]+'), BOOK_FLAGS (lc-decode options), BOOK_ENCODE
#                (lc-encode options: --truncate for BART's 1024 positions), BOOK_OUT (an lc
#                stream, default $(O)/book-summary.lc; the chapters' summaries beside
#                it in BOOK_OUT.chapters.lc); share/book-summary.sh is the pipeline
#   demo-model   GSG-pretrain share/models/demo with lc-train from the bundled KJV
#                (DEMO_CONFIG, DEMO_TRAIN; resumable; see share/models/demo/README)
#   clean        remove build directories
#
# Knobs (config.mk, or on the command line): PREFIX, MANPREFIX, SHAREDIR,
# DESTDIR, CC, OPT, CFLAGS, LDFLAGS, O (build directory), SANITIZE, CUDA, CUDA_HOME,
# LC_DNNL (0: no oneDNN),
# FUZZ_SECONDS, LC_THREADS (used by tests and benchmarks).
#
# `make`, `make check` and `make demo` run `make deps` themselves when
# pkg-config cannot find a dependency.

include config.mk

# pkg-config names of the libraries, and the Debian packages behind them.
PKGS      = fftw3f openblas libarchive libpcre2-8 jansson
DEB_BUILD = build-essential pkg-config libfftw3-dev libopenblas-dev \
            libarchive-dev libpcre2-dev libjansson-dev mandoc libdnnl-dev
# Test and benchmark tools: archive formats for the archive tests, clang/libFuzzer
# for `make fuzz`, spm_encode for the tokenizer benchmark and cross-checks,
# GNU time and bc for `make bench`, gnuplot for the demo model's loss plot,
# GNU parallel and rsync (its file transfers) for `make summaries HOSTS=...`,
# python3 for the suites' cross-checks (JSON and safetensors read back, the ROUGE generator).
DEB_TEST  = clang libclang-rt-14-dev zstd xz-utils bzip2 zip sentencepiece time bc gnuplot-nox \
            parallel rsync python3
DEB_ALL   = $(DEB_BUILD) $(DEB_TEST)

LIB_SRC   = $(sort $(wildcard lib/*/*.c))
CMD_SRC   = $(sort $(wildcard cmd/lc-*.c))
UNIT_SRC  = $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC  = $(sort $(wildcard tests/fuzz/fuzz_*.c))
SH_TESTS  = $(sort $(wildcard tests/sh/t[0-9]*.sh))
MAN_PAGES = $(sort $(wildcard man/man1/*.1 man/man5/*.5 man/man7/*.7))

LIB_OBJ   = $(LIB_SRC:lib/%.c=$(O)/lib/%.o)
PROGS     = $(CMD_SRC:cmd/%.c=$(O)/bin/%)
UNITS     = $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
LIBLC     = $(O)/liblc.a

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# oneDNN (libdnnl-dev; optional, no pkg-config file): used when its header
# compiles, else every product is OpenBLAS's. LC_DNNL=0 builds without it.
# -lgomp: lib/compute/dnnl.c sets the OpenMP thread count oneDNN runs on.
ifeq ($(origin LC_DNNL),undefined)
LC_DNNL   := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\n' | \
               $(CC) -E -x c - >/dev/null 2>&1 && echo 1 || echo 0)
endif
DNNL_CFLAGS = $(if $(filter 1,$(LC_DNNL)),-DLC_HAVE_DNNL)
DNNL_LIBS   = $(if $(filter 1,$(LC_DNNL)),-ldnnl -lgomp)

# CUDA=1: lib/compute/cuda.c and cudadev.c against the CUDA Toolkit in
# CUDA_HOME (config.mk), and the kernels of lib/compute/cudak.cu built by
# its nvcc; the library path recorded in the programs.
CUDA_CFLAGS = $(if $(filter 1,$(CUDA)),-DLC_HAVE_CUDA -isystem $(CUDA_HOME)/include)
CUDA_RPATH  = -Wl,-rpath,$(CUDA_HOME)/lib64
CUDA_LIBS   = $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 $(CUDA_RPATH) -lcufft -lcublas -lcudart -lstdc++)
CUDA_OBJ    = $(if $(filter 1,$(CUDA)),$(O)/lib/compute/cudak.o)

ALL_CFLAGS = $(CFLAGS) $(SANITIZE) -Ilib $(PKG_CFLAGS) $(DNNL_CFLAGS) $(CUDA_CFLAGS) \
             -DLC_VERSION='"$(VERSION)"'
ALL_LIBS   = $(LIBLC) $(PKG_LIBS) $(DNNL_LIBS) $(CUDA_LIBS) -lm -lpthread

.PHONY: FORCE all build deps ensure-deps check check-run check-asan check-cuda check-cuda-run fuzz bench demo \
        install uninstall clean tokenizer gsg-data span-data summaries book-summary
.SUFFIXES:

all: ensure-deps
	@$(MAKE) --no-print-directory build

build: $(PROGS) $(LIBLC)

# pkg-config is evaluated in the sub-make, after deps may have installed it.
ensure-deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists $(PKGS) || \
	    ! command -v mandoc >/dev/null 2>&1; then \
		echo "lc: some dependencies are missing; running make deps"; \
		$(MAKE) --no-print-directory deps || exit 1; \
	fi

deps:
	@if [ "$$(id -u)" = 0 ]; then \
		echo "apt-get install -y $(DEB_ALL)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEB_ALL); \
	else \
		echo "lc: run as root to install the dependencies:"; \
		echo "  sudo apt-get install -y --no-install-recommends $(DEB_ALL)"; \
		exit 1; \
	fi

# Rebuild everything when a setting compiled into it changes (flags, version).
BUILD_ID = $(CC) $(CFLAGS) $(SANITIZE) $(VERSION) dnnl=$(LC_DNNL) cuda=$(CUDA) $(CUDA_HOME) $(NVCC_ARCH)
$(O)/.settings: FORCE
	@mkdir -p $(@D)
	@echo '$(BUILD_ID)' | cmp -s - $@ || echo '$(BUILD_ID)' >$@
FORCE:

# Where the programs find share/ (lib/base/share.h): $LC_SHARE, else the
# source tree's share/ for the programs in $(O)/bin, else PREFIX/share/lc
# next to an installed PREFIX/bin, else SHAREDIR. These paths go into
# lib/base/share.o alone, so changing them rebuilds that one object (and
# relinks), never the tree. `make install` keeps the SHAREDIR the tree was
# built with when its own is $(PREFIX)/share/lc (KEEP_SHAREDIR=1): the
# installed programs find that one next to their bin/, so installing to
# any PREFIX only copies.
SHARE_ID    = $(SHAREDIR) $(CURDIR)/share $(abspath $(O))/bin
SHARE_FLAGS = -DLC_SHAREDIR='"$(SHAREDIR)"' -DLC_TREE_SHARE='"$(CURDIR)/share"' \
              -DLC_TREE_BIN='"$(abspath $(O))/bin"'
$(O)/.share-settings: FORCE
	@mkdir -p $(@D)
	@if [ -z '$(KEEP_SHAREDIR)' ] || [ ! -f $@ ]; then \
		echo '$(SHARE_ID)' | cmp -s - $@ || echo '$(SHARE_ID)' >$@; fi
$(O)/lib/base/share.o: private ALL_CFLAGS += $(SHARE_FLAGS)
$(O)/lib/base/share.o: $(O)/.share-settings

# Header dependencies come from the compiler (-MMD): each object's .d file
# lists the headers it included, so a header change rebuilds exactly those.
DEPFLAGS  = -MMD -MP
-include $(LIB_OBJ:.o=.d) $(PROGS:%=%.d) $(UNITS:%=%.d)

$(O)/lib/%.o: lib/%.c config.mk $(O)/.settings
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/lib/compute/cudak.o: lib/compute/cudak.cu lib/compute/cudak.h lib/compute/dev.h config.mk $(O)/.settings
	@mkdir -p $(@D)
	@echo "  NVCC    $<"
	@$(CUDA_HOME)/bin/nvcc -O3 $(NVCC_ARCH) -Ilib -Xcompiler -fPIC -c -o $@ $<

$(LIBLC): $(LIB_OBJ) $(CUDA_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $(LIB_OBJ) $(CUDA_OBJ)

$(O)/bin/%: cmd/%.c $(LIBLC) $(O)/.settings
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $@.d -o $@ $< $(ALL_LIBS) $(LDFLAGS)

$(O)/tests/%: tests/unit/%.c tests/t.h $(LIBLC)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_CFLAGS) -Itests $(DEPFLAGS) -MF $@.d -o $@ $< $(ALL_LIBS) $(LDFLAGS)

check: ensure-deps
	@$(MAKE) --no-print-directory build $(UNITS)
	@$(MAKE) --no-print-directory check-run

check-run:
	@O=$(O) LC_SHARE=$(CURDIR)/share LC_TESTDATA=$(CURDIR)/tests/data \
	    PATH=$(CURDIR)/$(O)/bin:$$PATH \
	    sh tests/run $(UNITS) $(SH_TESTS) $(MAN_PAGES:%=lint:%)

check-asan:
	@$(MAKE) --no-print-directory O=build-asan OPT=-O1 \
	    SANITIZE='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all' \
	    check

# The GPU's tests: a CUDA=1 build in build-cuda/, then the unit tests of
# the model layer and the suites with oracle goldens (LOCOST, BART, LSG,
# BART-LS, top-down, fairseq, training) and bf16 with the device cuda
# ($LC_DEVICE=cuda: a program that cannot have it fails rather than run
# on the CPU), as a user runs them; then the products' and the device's
# own units with every product and attention on the GPU ($LC_CUDA_ALL=1:
# the tests' small ones too, which lc otherwise keeps on the CPU). LC_CUDA_ALL=1
# make check-cuda-run sends them all for every test (much slower: each
# small product crosses the bus).
CUDA_UNITS = $(addprefix build-cuda/tests/test_,dev gemm ops ssm xkern parallel locost decoder search \
               sample pipe_decode bart bart_grads bartls bartls_grads bartlsattn lsg topdown \
               topdown_grads fairseq train train_grads)
CUDA_TESTS = $(filter $(addprefix tests/sh/,t6000% t6010% t6030% t6040% t7000% t7010% t7020% \
               t7100% t7200% t7300% t7400% t7500% t8000% t8200% t8300%),$(SH_TESTS))
check-cuda:
	@if ! nvidia-smi -L >/dev/null 2>&1; then echo "check-cuda: skipped: no GPU"; exit 0; fi; \
	$(MAKE) --no-print-directory O=build-cuda CUDA=1 all && \
	$(MAKE) --no-print-directory O=build-cuda CUDA=1 $(CUDA_UNITS) && \
	$(MAKE) --no-print-directory check-cuda-run

# check-cuda's tests alone, on a build-cuda/ made before (or elsewhere).
check-cuda-run:
	@LC_SHARE=$(CURDIR)/share build-cuda/bin/lc-encode -d cuda --info | grep '^device' && \
	LC_DEVICE=cuda $(MAKE) --no-print-directory O=build-cuda UNITS='$(CUDA_UNITS)' \
	    SH_TESTS='$(CUDA_TESTS)' MAN_PAGES= check-run && \
	LC_DEVICE=cuda LC_CUDA_ALL=1 $(MAKE) --no-print-directory O=build-cuda \
	    UNITS='build-cuda/tests/test_gemm build-cuda/tests/test_dev' SH_TESTS= MAN_PAGES= check-run

FUZZ_SECONDS = 20
FUZZ_BIN  = $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_OBJ  = $(LIB_SRC:lib/%.c=build-fuzz/lib/%.o)
FUZZ_CFLAGS = -g -O1 -std=c11 -D_GNU_SOURCE -Ilib $(PKG_CFLAGS)
FUZZ_SAN  = -fsanitize=fuzzer-no-link,address,undefined
# The compute kernels' intrinsics take clang's sanitizers over ten minutes
# (2 s without), and no fuzz target reaches them.
build-fuzz/lib/compute/xkern.o build-fuzz/lib/compute/xkern16.o: FUZZ_SAN = -fsanitize=fuzzer-no-link
# kept between runs (make would delete them as a pattern rule's intermediates)
.SECONDARY: $(FUZZ_OBJ)
-include $(FUZZ_OBJ:.o=.d)
build-fuzz/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	@echo "  CC      $< (fuzz)"
	@clang $(FUZZ_CFLAGS) $(DEPFLAGS) $(FUZZ_SAN) -c -o $@ $<
build-fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_file.h $(FUZZ_OBJ)
	@echo "  LD      $@"
	@clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_OBJ) $(PKG_LIBS) -lm -lpthread

fuzz: ensure-deps
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do \
		n=$$(basename $$f); mkdir -p build-fuzz/corpus/$$n; \
		seeds=tests/fuzz/seeds/$$n; [ -d $$seeds ] || seeds=; \
		echo "fuzz: $$n for $(FUZZ_SECONDS)s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
		    -artifact_prefix=build-fuzz/$$n- \
		    build-fuzz/corpus/$$n $$seeds 2>build-fuzz/$$n.log || \
		    { tail -40 build-fuzz/$$n.log; exit 1; }; \
		tail -1 build-fuzz/$$n.log; \
	done

# BENCH=NAME runs bench/NAME.sh alone (default: every script).
BENCH = *
bench: all
	@set -e; for b in bench/$(BENCH).sh; do \
		[ $$b = bench/cc.sh ] && continue; \
		LC_SHARE=$(CURDIR)/share PATH=$(CURDIR)/$(O)/bin:$$PATH LC_LIBS='$(ALL_LIBS)' sh $$b; \
	done

demo: all
	@LC_SHARE=$(CURDIR)/share PATH=$(CURDIR)/$(O)/bin:$$PATH sh share/demo.sh

CORPUS    = share/samples/kjv.txt.xz
GSG_CUT   = ^CHAPTER [0-9]+
GSG_FLAGS = -r 0.2 -s ind
GSG_OUT   = $(O)/gsg-pairs.lc
gsg-data: all
	@set -e; export PATH=$(CURDIR)/$(O)/bin:$$PATH LC_SHARE=$(CURDIR)/share; \
	if [ -n '$(GSG_CUT)' ]; then lc-chunk -p '$(GSG_CUT)' '$(CORPUS)'; else lc-cat -i text '$(CORPUS)'; fi | \
		lc-gsg-split $(GSG_FLAGS) -m share/spiece.model >'$(GSG_OUT).tmp'; \
	mv '$(GSG_OUT).tmp' '$(GSG_OUT)'; \
	lc-cat -o info '$(GSG_OUT)' | awk -F'\t' '$$1=="doc"{d++} $$1=="tensor"&&$$4=="source"{s+=$$6} \
		$$1=="tensor"&&$$4=="target"{t+=$$6} END{printf "$(GSG_OUT): %d pairs, %d source and %d target tokens\n", d, s, t}'

# span-data: MODEL is the summaries' (below); the pairs go to SPAN_OUT.tmp,
# renamed when complete (removed on failure), so SPAN_OUT is whole or absent.
SPAN_CUT   = $(if $(filter share/samples/kjv.txt.xz,$(CORPUS)),^CHAPTER [0-9]+)
SPAN_FLAGS = -r 0.0625 -l 3 --seed 3
SPAN_OUT   = $(O)/span-pairs.lc
span-data: all
	@set -e; export PATH=$(CURDIR)/$(O)/bin:$$PATH LC_SHARE=$(CURDIR)/share; \
	out='$(SPAN_OUT)'; trap 'rm -f "$$out.tmp"' EXIT; \
	if [ -n '$(SPAN_CUT)' ]; then lc-chunk -q -p '$(SPAN_CUT)' '$(CORPUS)'; else lc-cat -q -i text '$(CORPUS)'; fi | \
		lc-tokenize -q -m '$(MODEL)' | lc-noise -m '$(MODEL)' $(SPAN_FLAGS) --stats >"$$out.tmp"; \
	mv "$$out.tmp" "$$out"; \
	lc-cat -o info "$$out" | awk -F'\t' '$$1=="doc"{d++} $$1=="tensor"&&$$4=="source"{s+=$$6} \
		$$1=="tensor"&&$$4=="target"{t+=$$6} END{printf "$(SPAN_OUT): %d pairs, %d source and %d target tokens\n", d, s, t}'

# Copies what `make` built (building only what is missing or out of date,
# never for install's own PREFIX: see SHARE_ID above).
install: ensure-deps
	@$(MAKE) --no-print-directory build \
	    $(if $(filter $(PREFIX)/share/lc,$(SHAREDIR)),KEEP_SHAREDIR=1)
	mkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SHAREDIR)
	for p in $(PROGS); do cp -f $$p $(DESTDIR)$(PREFIX)/bin/; done
	for s in 1 5 7; do mkdir -p $(DESTDIR)$(MANPREFIX)/man$$s; \
		for m in man/man$$s/*.$$s; do [ -f $$m ] && cp -f $$m $(DESTDIR)$(MANPREFIX)/man$$s/; done; \
	done
	cd share && find . -type f ! -name '*.sh' ! -name '*.py' | while read f; do \
		mkdir -p "$(DESTDIR)$(SHAREDIR)/$$(dirname "$$f")"; \
		cp -f "$$f" "$(DESTDIR)$(SHAREDIR)/$$f"; done

uninstall:
	for p in $(CMD_SRC:cmd/%.c=%); do rm -f $(DESTDIR)$(PREFIX)/bin/$$p; done
	for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANPREFIX)/$${m#man/}; done
	rm -rf $(DESTDIR)$(SHAREDIR)

# --- tokenizer (issue 3): retrain share/spiece.model; needs the packages below.
DEB_TOKENIZER = sentencepiece bible-kjv bible-kjv-text wordnet-base python3.11-doc
tokenizer:
	@if [ "$$(id -u)" = 0 ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEB_TOKENIZER); \
	fi
	sh share/train-tokenizer.sh share/spiece.model
# --- end tokenizer

# --- demo model (issue 8): share/models/demo from nothing but this machine:
# the bundled KJV (share/samples) -> lc-chunk chapters -> lc-gsg-split pairs
# (make gsg-data) -> lc-train GSG pretraining (DEMO_CONFIG, DEMO_TRAIN) ->
# share/models/demo (config.json, model.safetensors, spiece.model), its loss
# curve (loss.tsv, loss.png with gnuplot) and the held-out evaluation
# (eval.txt). Resumable: run it again after an interruption. 800 steps:
# about 20 minutes on 2 idle cores (3,400 tokens/s), 37 on the loaded
# machine that built the committed model. Needs gnuplot for the plot
# (Debian: gnuplot-nox).
DEMO_CONFIG = share/models/demo-config.json
DEMO_RUN    = $(O)/demo-run
DEMO_TRAIN  = --steps 800 --lr 1e-3 --schedule invsqrt --warmup 100 --batch-tokens 4096 \
              --max-src 512 --max-tgt 128 --holdout 40 --eval-every 50 --save-every 50 --seed 1 \
              --no-rouge
demo-model: gsg-data
	@set -e; export PATH=$(CURDIR)/$(O)/bin:$$PATH LC_SHARE=$(CURDIR)/share; \
	lc-train --config $(DEMO_CONFIG) -o $(DEMO_RUN) $(DEMO_TRAIN) -t share/spiece.model \
		--holdout-out $(DEMO_RUN)/heldout '$(GSG_OUT)'; \
	sh share/models/make-demo.sh $(DEMO_RUN) share/models/demo
# --- end demo model

# --- summaries (issue 19): CORPUS summarized into SUMMARIES on this
# machine, or with HOSTS over several with GNU parallel (lc(7), "Many
# machines"): lc-cat --shard deals the documents into SHARDS streams;
# parallel sends each to a free host, into a scratch directory of its own
# (--workdir ... --transferfile), runs lc-encode | lc-decode
# there (the documents are tokenized here first: a JSON Lines CORPUS,
# *.jsonl[.gz|.xz|.zst|.bz2], with lc-tokenize --jsonl), brings the
# summaries back (--return), removes both (--cleanup)
# and stops at the first failure (--halt); lc-cat --merge puts them back
# in the corpus's order and fails on a lost shard. The model goes to the
# same absolute path on every host (--basefile; rsync sends only what
# changed). One job at a time on each host (-j 1: lc uses all the cores;
# N/host in HOSTS for more). The hosts need lc installed (make install),
# perl and rsync; options for parallel itself (--ssh, --env LC_THREADS,
# ...) go in its environment variable PARALLEL. The same summaries either
# way, byte for byte on like hosts (tests/sh/t2030-parallel.sh).
MODEL     = share/models/demo
SUM_CUT   = $(if $(filter share/samples/kjv.txt.xz,$(CORPUS)),^BOOK [0-9A-Z])
SUM_FLAGS =
SUMMARIES = $(O)/summaries.lc
HOSTS     =
SHARDS    = 16
SUM_MODEL = $(abspath $(MODEL))
SUM_JSONL = $(filter %.jsonl %.jsonl.gz %.jsonl.xz %.jsonl.zst %.jsonl.bz2,$(CORPUS))
SUM_TEXT  = text
SUM_ID    = id
SUM_RUN   = lc-encode -q -m '$(SUM_MODEL)' $(1) | lc-decode -q -m '$(SUM_MODEL)' -f stream $(SUM_FLAGS)
summaries: all
	@set -e; export PATH=$(CURDIR)/$(O)/bin:$$PATH LC_SHARE=$(CURDIR)/share; \
	case ' $(SUM_FLAGS) ' in *' -f'*|*' --format'*) echo "summaries: SUM_FLAGS: the summaries \
	are a stream (lc-cat -o text or -o jsonl $(SUMMARIES) prints them): no -f" >&2; exit 2;; esac; \
	out='$(abspath $(SUMMARIES))'; w="$$out.d"; trap 'rm -rf "$$w" "$$out.tmp"' EXIT; rm -rf "$$w"; \
	if [ -n '$(SUM_JSONL)' ] && [ -n '$(SUM_CUT)' ]; then \
		echo "summaries: SUM_CUT cuts text, not a JSON Lines corpus" >&2; exit 2; fi; \
	docs() { if [ -n '$(SUM_JSONL)' ]; then \
		lc-tokenize -q -m '$(SUM_MODEL)' --jsonl --text '$(SUM_TEXT)' --id '$(SUM_ID)' '$(CORPUS)'; \
		elif [ -n '$(SUM_CUT)' ]; then lc-chunk -q -p '$(SUM_CUT)' '$(CORPUS)' | lc-tokenize -q -m '$(SUM_MODEL)'; \
		else lc-cat -i text '$(CORPUS)' | lc-tokenize -q -m '$(SUM_MODEL)'; fi; }; \
	if [ -z '$(HOSTS)' ]; then \
		docs | $(call SUM_RUN,) >"$$out.tmp"; \
	else \
		command -v parallel >/dev/null || { echo "summaries: HOSTS needs GNU parallel" >&2; exit 1; }; \
		mkdir "$$w"; docs | lc-cat --shard $(SHARDS) -O "$$w/shard"; \
		(cd "$$w" && parallel --will-cite -j 1 --sshloginfile '$(abspath $(HOSTS))' --workdir ... \
			--basefile '$(SUM_MODEL)' --transferfile {} --return {.}.sum --cleanup --halt now,fail=1 \
			"$(call SUM_RUN,{}) >{.}.sum" ::: shard.*.lc); \
		lc-cat --merge "$$w"/shard.*.sum >"$$out.tmp"; \
	fi; \
	mv "$$out.tmp" "$$out"; \
	echo "$(SUMMARIES): $$(lc-cat -o info "$$out" | grep -c '^doc') summaries (lc-cat -o text $(SUMMARIES) prints them)"
# --- end summaries

# --- book-summary (issue 16): a whole book summarized chapter by chapter,
# then the concatenated chapter summaries summarized (share/book-summary.sh);
# BOOK_OUT and BOOK_OUT.chapters.lc are written whole or not at all.
BOOK        = share/samples/sample.txt
CHAPTER_CUT = ^CHAPTER [0-9]+
BOOK_FLAGS  =
BOOK_ENCODE =
BOOK_OUT    = $(O)/book-summary.lc
book-summary: all
	@set -e; export PATH=$(CURDIR)/$(O)/bin:$$PATH LC_SHARE=$(CURDIR)/share; \
	out='$(BOOK_OUT)'; trap 'rm -f "$$out.tmp" "$$out.chapters.tmp"' EXIT; \
	LC_DECODE_FLAGS='$(BOOK_FLAGS)' LC_ENCODE_FLAGS='$(BOOK_ENCODE)' sh share/book-summary.sh '$(BOOK)' '$(MODEL)' \
		'$(CHAPTER_CUT)' "$$out.chapters.tmp" >"$$out.tmp"; \
	mv "$$out.chapters.tmp" "$$out.chapters.lc"; mv "$$out.tmp" "$$out"; \
	echo "$$out.chapters.lc: $$(lc-cat -o info "$$out.chapters.lc" | grep -c '^doc') chapter summaries"; \
	echo "$$out: the book's summary (lc-cat -o text $$out prints it)"
# --- end book-summary

# The default build directories, and O= when it names another.
clean:
	rm -rf build build-asan build-cuda build-fuzz build-clang $(O)
