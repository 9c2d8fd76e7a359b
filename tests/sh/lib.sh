# tests/sh/lib.sh: sourced by every pipeline test (tests/sh/tNNNN-*.sh).
#
#   ok "name" cmd...          passes if cmd exits 0
#   fails N "name" cmd...     passes if cmd exits with status N
#   same "name" FILE1 FILE2   passes if the files are byte-identical
#   skip "name" "why"         counts a skip
#   need CMD || skip_all WHY  prerequisite that skips the rest of the script
#   done_testing              prints "N passed, N failed, N skipped"; exit status
#
# Each script runs in its own scratch directory $T, removed on success.
set -u
# sort and the other tools order and classify bytes as in the C locale,
# whatever the caller's (a UTF-8 locale sorts "_name" after "max")
LC_ALL=C; export LC_ALL
t_pass=0 t_fail=0 t_skip=0
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-test.XXXXXX")
DATA=${LC_TESTDATA:-$(pwd)/tests/data}

_res() {
	if [ "$1" = 0 ]; then
		t_pass=$((t_pass + 1)); echo "ok - $2"
	else
		t_fail=$((t_fail + 1)); echo "not ok - $2"
	fi
}
ok() { n=$1; shift; "$@" >"$T/out" 2>"$T/err"; r=$?
	[ $r = 0 ] || { echo "# exit $r: $*"; sed 's/^/# /' "$T/err" | head -5; }
	_res $r "$n"; }
fails() { want=$1 n=$2; shift 2; "$@" >"$T/out" 2>"$T/err"; r=$?
	[ $r = "$want" ] || echo "# want exit $want, got $r: $*"
	[ $r = "$want" ]; _res $? "$n"; }
same() { if cmp -s "$2" "$3"; then _res 0 "$1"; else
	echo "# $2 and $3 differ:"; diff "$2" "$3" 2>/dev/null | head -10 | sed 's/^/# /'; _res 1 "$1"; fi; }
is() { if [ "$2" = "$3" ]; then _res 0 "$1"; else
	echo "# got:  $2"; echo "# want: $3"; _res 1 "$1"; fi; }
skip() { t_skip=$((t_skip + 1)); echo "ok - $1 # skip $2"; }
need() { command -v "$1" >/dev/null 2>&1; }
# one_cpu NAME PATTERN CMD...: CMD run on processor 0 alone (taskset -c 0)
# prints a line matching PATTERN; skipped where taskset cannot do that
one_cpu() { n=$1 p=$2; shift 2
	if need taskset && taskset -c 0 true 2>/dev/null; then
		taskset -c 0 "$@" >"$T/out" 2>&1; grep -q "$p" "$T/out"; _res $? "$n"
	else skip "$n" "no taskset here"; fi; }
skip_all() { echo "# skipping the rest: $1"; t_skip=$((t_skip + 1)); done_testing; }
done_testing() {
	echo "$t_pass passed, $t_fail failed, $t_skip skipped"
	[ $t_fail = 0 ] && rm -rf "$T"
	exit $((t_fail != 0))
}
