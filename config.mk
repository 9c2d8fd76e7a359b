# config.mk: the knobs. Override on the command line: make PREFIX=/opt/lc
VERSION   = 0.1.0
PREFIX    = /usr/local
MANPREFIX = $(PREFIX)/share/man
# Where install puts share/. The programs look there last (lib/base/share.h):
# first $LC_SHARE, then the source tree's share/ when run from the build
# tree, then PREFIX/share/lc next to their own PREFIX/bin, so installing to
# another PREFIX needs no rebuild. Set it apart from PREFIX at build time.
SHAREDIR  = $(PREFIX)/share/lc
DESTDIR   =

CC        = cc
OPT       = -O2
# Error messages are cut to fit their buffers on purpose; gcc would warn.
WNO       = $(shell $(CC) -Werror -Wno-format-truncation -E -x c /dev/null >/dev/null 2>&1 && echo -Wno-format-truncation)
CFLAGS    = $(OPT) -g -std=c11 -Wall -Wextra -Werror $(WNO) -D_GNU_SOURCE
LDFLAGS   =

# Build directory; check-asan uses its own.
O         = build

# Extra flags for a build variant (sanitizers, coverage).
SANITIZE  =

# CUDA=1 builds the optional GPU backend (lib/compute/cuda*.c, cudak.cu):
# the CUDA Toolkit in CUDA_HOME (nvcc, cuBLAS, cuFFT); NVCC_ARCH the GPUs
# it compiles for (machine code for Ampere and Hopper, PTX for newer).
CUDA      =
CUDA_HOME = /usr/local/cuda
NVCC_ARCH = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
