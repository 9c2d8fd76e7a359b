# bench/cc.sh, sourced by the benchmarks: bench_cc OUT SOURCE compiles a
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
