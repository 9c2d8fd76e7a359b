# bench/cc.sh, sourced by the benchmarks: their shared helpers.
#
# bench_ids N SEED: an lc stream of one document of N random ids (3..32002,
# T5's vocabulary, then eos 1), the same for the same N and SEED.
bench_ids() {
	awk -v n="$1" -v s="$2" 'BEGIN { srand(s); for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32000); print 1 }' |
		lc-cat -i ids
}

# bench_cc OUT SOURCE compiles a
# benchmark's helper program against the built library, with the link
# line `make bench` passes in LC_LIBS (the same libraries as the programs:
# with oneDNN when the build found it); run by hand, build/ and
# pkg-config's libraries, plus oneDNN when the build has it.
bench_cc() {
	libs=${LC_LIBS:-}
	if [ -z "$libs" ]; then
		libs="build/liblc.a $(pkg-config --libs fftw3f openblas libarchive libpcre2-8 jansson)"
		if nm build/liblc.a 2>/dev/null | grep -q ' U dnnl_'; then libs="$libs -ldnnl -lgomp"; fi
		libs="$libs -lm -lpthread"
	fi
	cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -o "$1" "$2" $libs
}

# bench_stats FILE: "SECONDS_A_STEP FIRST_STEP LAYERS_CACHED" from the
# standard error of `lc-decode --stats` (a step timed inside lc-decode,
# the first step, which reads the states and builds any cache, apart;
# two whole runs of 1 and N + 1 tokens subtracted gave differences that
# varied by half from run to run on a shared machine, and went negative).
# A field lc-decode did not print is "?".
bench_stats() {
	sed -n 's/.*first \([0-9.]*\) s, then \([0-9.]*\) s a step; cross cache \([0-9]*\) of.*/\2 \1 \3/p' "$1" |
		awk 'END { print (NF == 3) ? $0 : "? ? ?" }'
}
