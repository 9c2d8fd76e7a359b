#!/bin/sh
# -j N is the number of threads, whatever the libraries underneath would
# start (OpenBLAS's pool, oneDNN's OpenMP team, FFTW): lc-encode's thread
# count, polled from /proc while it encodes a few thousand tokens, never
# exceeds N. OpenBLAS's pthread build starts a pool when it is loaded,
# before main, and lc stops it when it opens the model (compute/cpu.c);
# so the count is taken from then on: the input arrives through a FIFO
# once the program, its model open, waits for it.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
M=$SHARE/models/demo
[ -r /proc/self/status ] || skip_all "no /proc"
need mkfifo || skip_all "no mkfifo"

# about 6000 tokens in two documents
lc-cat -i text "$SHARE/samples/sample.txt" | lc-tokenize -q -m "$SHARE/spiece.model" >"$T/one.lc"
cat "$T/one.lc" "$T/one.lc" >"$T/tok.lc"

threads() { # process $1's thread count (nothing once it has exited), forking nothing
	while read -r k v; do
		case $k in
		State:) case $v in Z*|X*) return ;; esac ;;
		Threads:) echo "$v"; return ;;
		esac
	done 2>/dev/null <"/proc/$1/status"
}

for j in 1 2; do
	rm -f "$T/fifo"
	mkfifo "$T/fifo"
	lc-encode -q -F -j "$j" -m "$M" "$T/fifo" >"$T/enc$j" &
	pid=$!
	exec 3>"$T/fifo"        # lc-encode's open of the FIFO returns
	# wait (at most about 20 s) for the model to be open: one thread left
	w=0
	while [ "$(threads $pid)" != 1 ] && [ $w -lt 2000 ]; do
		w=$((w + 1)); sleep 0.01
	done
	cat "$T/tok.lc" >&3
	exec 3>&-
	peak=0
	while n=$(threads $pid) && [ -n "$n" ]; do
		[ "$n" -gt "$peak" ] && peak=$n
	done
	wait $pid
	is "lc-encode -j $j exits 0" "$?" 0
	ok "lc-encode -j $j: at most $j threads (peak $peak)" [ "$peak" -le "$j" ]
	ok "lc-encode -j $j: two documents" sh -c "lc-cat -o info '$T/enc$j' | grep -c '^doc' | grep -qx 2"
done
same "-j 1 and -j 2: the same states" "$T/enc1" "$T/enc2"

done_testing
