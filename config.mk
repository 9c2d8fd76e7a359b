# config.mk: the knobs. Override on the command line: make PREFIX=/opt/lc
VERSION   = 0.1.0
PREFIX    = /usr/local
MANPREFIX = $(PREFIX)/share/man
SHAREDIR  = $(PREFIX)/share/lc
DESTDIR   =

CC        = cc
OPT       = -O2
CFLAGS    = $(OPT) -g -std=c11 -Wall -Wextra -Werror -Wno-format-truncation -D_GNU_SOURCE
LDFLAGS   =

# Build directory; check-asan uses its own.
O         = build

# Extra flags for a build variant (sanitizers, coverage).
SANITIZE  =

# CUDA=1 builds the optional cuBLAS/cuFFT backend (needs the CUDA Toolkit).
CUDA      =
