#!/bin/sh
# The layers of lib/ (lib/README): each folder includes only the headers
# of the layers below it and its own; only compute/ reaches the numeric
# libraries; only cmd/ uses base/cli.h; every lib/ header is self-contained.
. tests/sh/lib.sh

allowed() {
	case $1 in
	base) echo "base" ;;
	stream) echo "base stream" ;;
	text) echo "base stream text" ;;
	weights) echo "base weights" ;;
	compute) echo "base compute" ;;
	ops) echo "base compute ops" ;;
	arch) echo "base weights compute ops arch" ;;
	gen) echo "base arch gen" ;;
	train) echo "base stream text weights compute ops arch gen train" ;;
	pipe) echo "base stream text weights compute ops arch gen pipe" ;;
	*) echo "" ;;
	esac
}

bad=0
for f in lib/*/*.c lib/*/*.h; do
	layer=$(echo "$f" | cut -d/ -f2)
	ok=$(allowed "$layer")
	if [ -z "$ok" ]; then
		echo "# $f: folder $layer is not a layer of lib/README"
		bad=$((bad + 1))
		continue
	fi
	for inc in $(sed -n 's|^#include "\([a-z]*\)/[a-z_0-9]*\.h".*|\1|p' "$f" | sort -u); do
		case " $ok " in
		*" $inc "*) ;;
		*) echo "# $f ($layer) includes from $inc"; bad=$((bad + 1)) ;;
		esac
	done
	if grep -qE '^#include "[a-z_0-9]+\.h"' "$f"; then
		echo "# $f: an include without its layer folder"
		bad=$((bad + 1))
	fi
done
is "lib/ includes only downwards" $bad 0

n=$(grep -lE '^#include <(cblas|fftw3|cublas|cufft|oneapi/dnnl)' lib/*/*.[ch] cmd/*.c | grep -v '^lib/compute/' | wc -l)
is "only compute/ includes BLAS and FFT headers" "$n" 0
n=$(grep -l '"base/cli.h"' lib/*/*.[ch] | grep -v '^lib/base/cli\.' | wc -l)
is "only cmd/ uses base/cli.h" "$n" 0

# every header compiles on its own
bad=0
for h in lib/*/*.h; do
	printf '#include "%s"\n#include "%s"\n' "${h#lib/}" "${h#lib/}" >"$T/h.c"
	if ! ${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Ilib \
	    $(pkg-config --cflags jansson 2>/dev/null) -c -o "$T/h.o" "$T/h.c" 2>"$T/h.err"; then
		echo "# $h:"; sed 's/^/#   /' "$T/h.err" | head -5
		bad=$((bad + 1))
	fi
done
is "every header is self-contained (and guarded)" $bad 0

# the fuzz targets compile against the library as it is (make fuzz needs
# clang and libFuzzer, and make check would not notice otherwise)
bad=0
for f in tests/fuzz/fuzz_*.c; do
	if ! ${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Ilib \
	    $(pkg-config --cflags fftw3f openblas libarchive libpcre2-8 jansson 2>/dev/null) \
	    -fsyntax-only "$f" 2>"$T/f.err"; then
		echo "# $f:"; sed 's/^/#   /' "$T/f.err" | head -5
		bad=$((bad + 1))
	fi
done
is "every fuzz target compiles" $bad 0
done_testing
