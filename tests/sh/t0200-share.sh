#!/bin/sh
# Where the programs find share/ (lib/base/share.h): $LC_SHARE when set;
# else the build tree's programs find the source tree's share/; else an
# installed program finds PREFIX/share/lc next to its PREFIX/bin; else the
# compiled-in SHAREDIR, and the messages say which was tried and why.
# `make install` copies the built tree and rebuilds nothing.
. tests/sh/lib.sh

SRC=$(pwd)
OARG=${O:-build}
O=$OARG
case $O in /*) ;; *) O=$SRC/$O ;; esac
BIN=$O/bin
SAMPLE=$SRC/share/samples/sample.txt
[ -x "$BIN/lc-tokenize" ] && [ -x "$BIN/lc-decode" ] || skip_all "no programs in $BIN"
[ -f "$SRC/share/spiece.model" ] && [ -d "$SRC/share/models/demo" ] || skip_all "no share/ in $SRC"
# what share.o was compiled with: SHAREDIR, the tree's share/, its bin/
SHAREDIR=$(cut -d' ' -f1 "$O/.share-settings" 2>/dev/null)
[ -n "$SHAREDIR" ] || SHAREDIR=/usr/local/share/lc

# Every command below runs with none of the variables set, from $T (not
# the source tree: nothing may depend on the current directory).
bare() { (cd "$T" && env -u LC_SHARE -u LC_TOKENIZER -u LC_MODEL "$@"); }
# The model directory lc-decode --info reports.
info_model() { awk -F'\t' '$1=="model"{print $2; exit}' "$T/out"; }

"$BIN/lc-tokenize" -m "$SRC/share/spiece.model" "$SAMPLE" >"$T/want.lc" 2>/dev/null
"$BIN/lc-tokenize" -m "$DATA/spm/t5like.model" "$SAMPLE" >"$T/want5.lc" 2>/dev/null

# --- the build tree
ok "build tree: lc-tokenize with LC_SHARE unset" bare "$BIN/lc-tokenize" "$SAMPLE"
same "it used the tree's share/spiece.model" "$T/out" "$T/want.lc"
ok "build tree: an empty LC_SHARE counts as unset" bare env LC_SHARE= "$BIN/lc-tokenize" "$SAMPLE"
same "the same tokens" "$T/out" "$T/want.lc"
ok "build tree: lc-decode --info finds the demo model" bare "$BIN/lc-decode" --info
d=$(info_model)
[ -n "$d" ] && [ "$d" -ef "$SRC/share/models/demo" ]; _res $? "it is the tree's share/models/demo ($d)"
ok "build tree: lc-encode --info finds the demo model" bare "$BIN/lc-encode" --info
[ "$(info_model)" = "$d" ]; _res $? "the same directory"
mkdir -p "$T/link"
ln -s "$BIN/lc-tokenize" "$T/link/lc-tokenize"
ok "a symbolic link to a build-tree program" bare "$T/link/lc-tokenize" "$SAMPLE"
same "finds the tree's share/ too" "$T/out" "$T/want.lc"

# --- $LC_SHARE overrides
mkdir -p "$T/alt"
cp "$DATA/spm/t5like.model" "$T/alt/spiece.model"
ok "LC_SHARE overrides the tree's share/" bare env LC_SHARE="$T/alt" "$BIN/lc-tokenize" "$SAMPLE"
same "it used \$LC_SHARE/spiece.model" "$T/out" "$T/want5.lc"
fails 1 "LC_SHARE without a tokenizer" bare env LC_SHARE="$T/nowhere" "$BIN/lc-tokenize" "$SAMPLE"
grep -q "$T/nowhere/spiece.model (the default, from \$LC_SHARE; " "$T/err"
_res $? "the message names the file and \$LC_SHARE"
fails 1 "LC_SHARE without a model" bare env LC_SHARE="$T/nowhere" "$BIN/lc-decode" --info
grep -q "the default model (from \$LC_SHARE; .*$T/nowhere/models/demo" "$T/err"
_res $? "the message names the directory and \$LC_SHARE"
ok "LC_TOKENIZER still comes before LC_SHARE" \
	bare env LC_SHARE="$T/nowhere" LC_TOKENIZER="$T/alt/spiece.model" "$BIN/lc-tokenize" "$SAMPLE"
same "it used \$LC_TOKENIZER" "$T/out" "$T/want5.lc"

# --- make install: copies the built tree, rebuilds nothing, and the
# installed programs find PREFIX/share/lc whatever PREFIX is.
# make with the variables of a `make check` (or check-asan) around us, if
# any, but not its jobserver, which this shell does not hold.
MF=$(printf '%s' "${MAKEFLAGS:-}" | sed 's/--jobserver-[a-z]*=[^ ]*//g')
mk() { env -u MFLAGS -u MAKELEVEL MAKEFLAGS="$MF" make -s --no-print-directory O="$OARG" "$@"; }
# the settings the tree was built with, against those make would use now
# (not the same when, say, build-asan is tested by hand without SANITIZE)
printf 'lc-t0200-id:\n\t@echo '"'"'$(BUILD_ID)'"'"'\n' | mk -f Makefile -f - lc-t0200-id >"$T/id" 2>/dev/null
if ! need make || [ ! -f Makefile ]; then
	skip "make install" "no make"
elif ! cmp -s "$T/id" "$O/.settings"; then
	skip "make install" "$OARG was built with other settings than make's here"
else
	# after `make` (a no-op under `make check`, which has just built)
	mk build >"$T/build.log" 2>&1 || { sed 's/^/# /' "$T/build.log" | tail -5; }
	touch "$T/stamp"
	if mk PREFIX=/opt/lc DESTDIR="$T/dest" install >"$T/install.log" 2>&1; then
		_res 0 "make install PREFIX=/opt/lc DESTDIR=..."
	else
		sed 's/^/# /' "$T/install.log" | tail -5; _res 1 "make install PREFIX=/opt/lc DESTDIR=..."
	fi
	find "$O" -newer "$T/stamp" ! -path "$O/log/*" ! -path "$O/log" >"$T/newer"
	if [ -n "$(find lib cmd config.mk Makefile -newer "$T/stamp" 2>/dev/null | head -1)" ]; then
		skip "make install rebuilt nothing in the build tree" "sources changed meanwhile"
	else
		sed 's/^/# newer: /' "$T/newer" | head -5
		is "make install rebuilt nothing in the build tree" "$(wc -l <"$T/newer" | tr -d ' ')" 0
	fi
	P=$T/dest/opt/lc
	[ -x "$P/bin/lc-tokenize" ] && [ -f "$P/share/lc/spiece.model" ] && [ -d "$P/share/lc/models/demo" ]
	_res $? "it installed the programs and share/ files"
	ok "installed: lc-tokenize with LC_SHARE unset" bare "$P/bin/lc-tokenize" "$SAMPLE"
	same "it used PREFIX/share/lc/spiece.model" "$T/out" "$T/want.lc"
	ok "installed: lc-decode --info" bare "$P/bin/lc-decode" --info
	is "it found PREFIX/share/lc/models/demo" "$(info_model)" "$P/share/lc/models/demo"
	rm -f "$P/share/lc/spiece.model"
	bare "$P/bin/lc-tokenize" "$SAMPLE" >"$T/out" 2>"$T/err"
	grep -q "$P/share/lc/spiece.model (the default, the installed share directory" "$T/err"
	_res $? "a missing installed tokenizer: the message names PREFIX/share/lc and why"
	ok "make uninstall" mk PREFIX=/opt/lc DESTDIR="$T/dest" uninstall
	[ ! -e "$P/bin/lc-tokenize" ] && [ ! -e "$P/share/lc" ]; _res $? "uninstall removed them"
fi

# --- elsewhere: the compiled-in SHAREDIR, and the message says so
mkdir -p "$T/else" "$T/p2/bin"
cp "$BIN/lc-tokenize" "$BIN/lc-decode" "$T/else/"
cp "$BIN/lc-decode" "$T/p2/bin/"        # a bin/ with no share/lc beside it
for prog in "$T/else/lc-decode" "$T/p2/bin/lc-decode"; do
	where=${prog#"$T"/}
	if bare "$prog" --info >"$T/out" 2>"$T/err"; then
		is "$where: falls back to SHAREDIR" "$(info_model)" "$SHAREDIR/models/demo"
	else
		grep -q "the default model (the compiled-in SHAREDIR: .*$SHAREDIR/models/demo" "$T/err"
		_res $? "$where: falls back to SHAREDIR, and the message says so"
	fi
done
if bare "$T/else/lc-tokenize" "$SAMPLE" >"$T/out" 2>"$T/err"; then
	[ -f "$SHAREDIR/spiece.model" ]; _res $? "elsewhere: lc-tokenize used SHAREDIR/spiece.model"
else
	grep -q "$SHAREDIR/spiece.model (the default, the compiled-in SHAREDIR: " "$T/err"
	_res $? "elsewhere: lc-tokenize names SHAREDIR/spiece.model and why"
fi
# the hint names each program's own tokenizer option (lc-decode's is -t:
# it said -m, lc-decode's model option)
mkdir -p "$T/notok"
cp "$SRC/share/models/demo/config.json" "$SRC/share/models/demo/model.safetensors" "$T/notok/"
printf '5 6 7\n' | "$BIN/lc-cat" -i ids | bare env LC_SHARE="$SRC/share" "$BIN/lc-encode" \
	-m "$T/notok" >"$T/notok.lc"
fails 1 "lc-decode -f text without a tokenizer anywhere" bare env LC_SHARE="$T/nowhere" \
	"$BIN/lc-decode" -m "$T/notok" -f text "$T/notok.lc"
grep -q 'use -t or \$LC_TOKENIZER' "$T/err"; _res $? "the hint names -t"
fails 1 "lc-tokenize without a tokenizer anywhere" bare env LC_SHARE="$T/nowhere" \
	"$BIN/lc-tokenize" "$SAMPLE"
grep -q 'use -m or \$LC_TOKENIZER' "$T/err"; _res $? "the hint names -m"
ok "elsewhere: LC_SHARE still works" bare env LC_SHARE="$SRC/share" "$T/else/lc-tokenize" "$SAMPLE"
same "the same tokens" "$T/out" "$T/want.lc"
done_testing
