#!/bin/sh
# Text inputs as every program takes them (lib/textin): files, archives,
# compressed files, directories, streams and the -d split modes, seen
# through lc-cat -i text.
. tests/sh/lib.sh

mkdir -p "$T/d"
printf 'first document\n' >"$T/d/a.txt"
printf 'second\r\nwith CRLF\n' >"$T/d/b.txt"
printf '' >"$T/d/c.txt"
names() { lc-cat -i text "$@" | lc-cat -o info | awk -F'\t' '$1=="doc"{print $3}' | tr '\n' ' '; }

is "a directory: one document per file, sorted" "$(names "$T/d")" "a.txt b.txt c.txt "
( cd "$T/d" && tar czf ../three.tar.gz a.txt b.txt c.txt )
is "tar.gz: members in archive order" "$(names "$T/three.tar.gz")" "a.txt b.txt c.txt "
lc-cat -i text "$T/three.tar.gz" | lc-cat -o text >"$T/tgz.txt"
cat "$T/d/a.txt" >"$T/want"; echo >>"$T/want"; cat "$T/d/b.txt" >>"$T/want"; echo >>"$T/want"; echo >>"$T/want"
same "tar.gz: contents exact" "$T/tgz.txt" "$T/want"
for z in gzip bzip2 xz zstd; do
	if need $z; then
		$z -c "$T/d/b.txt" >"$T/b.z"
		lc-cat -i text "$T/b.z" | lc-cat -o text >"$T/z.out"
		{ cat "$T/d/b.txt"; echo; } >"$T/z.want"
		same "$z file decompressed" "$T/z.out" "$T/z.want"
	else
		skip "$z file" "no $z"
	fi
done
if need zip; then
	( cd "$T/d" && zip -q ../z.zip b.txt a.txt )
	is "zip: members in archive order" "$(names "$T/z.zip")" "b.txt a.txt "
else
	skip "zip" "no zip"
fi
( cd "$T/d" && tar cf - a.txt b.txt ) | xz >"$T/t.tar.xz"
is "tar.xz from stdin" "$(names - <"$T/t.tar.xz")" "a.txt b.txt "

printf 'l1\nl2\r\n\nl4' >"$T/lines"
is "-d line names" "$(names -d line "$T/lines")" "$T/lines:1 $T/lines:2 $T/lines:3 $T/lines:4 "
lc-cat -i text -d line "$T/lines" | lc-cat -o text >"$T/l.out"
printf 'l1\nl2\r\n\nl4\n' >"$T/l.want"
same "-d line keeps \\r and empty lines" "$T/l.out" "$T/l.want"
printf '\n\npara one\nline two\n\n\n  \npara two\n' >"$T/paras"
is "-d blank paragraphs" "$(names -d blank "$T/paras")" "$T/paras:1 $T/paras:2 "
lc-cat -i text -d blank "$T/paras" | lc-cat -o text >"$T/p.out"
printf 'para one\nline two\npara two\n' >"$T/p.want"
same "-d blank contents" "$T/p.out" "$T/p.want"
printf 'a\0b\0' | lc-cat -i text -d nul | lc-cat -o text >"$T/n.out"
printf 'a\nb\n' >"$T/n.want"
same "-d nul" "$T/n.out" "$T/n.want"
printf 'x y\n' | lc-cat -i text -d line | lc-cat -i text | lc-cat -o text >"$T/s.out"
printf 'x y\n' >"$T/s.want"
same "a stream of text is text input" "$T/s.out" "$T/s.want"
is "stdin is one document" "$(printf 'a\nb\n' | names)" "stdin "
is "empty stdin is one empty document" "$(names </dev/null)" "stdin "
is "empty stdin, -d line: none" "$(names -d line </dev/null)" ""

# Invalid UTF-8 and NUL bytes pass unchanged.
printf '\377\376 ok \0 x' >"$T/bin"
lc-cat -i text "$T/bin" | lc-cat -o raw >"$T/bin.out"
same "bytes pass unchanged" "$T/bin" "$T/bin.out"

# A 10 MB document in one piece.
head -c 10000000 /dev/zero | tr '\0' 'a' >"$T/big"
is "10 MB document" "$(lc-cat -i text "$T/big" | lc-cat -o info | awk -F'\t' '$1=="tensor"{print $6}')" 10000000

# An empty directory (or one of directories alone) holds no documents.
mkdir -p "$T/emptyd/sub"
ok "an empty directory" lc-cat -i text "$T/emptyd"
is "no documents" "$(lc-cat -o info <"$T/out" | grep -c '^doc')" 0

# Damaged archives are errors naming the input.
head -c 30 "$T/three.tar.gz" >"$T/cut.tar.gz"
fails 1 "truncated tar.gz" lc-cat -i text "$T/cut.tar.gz"
grep -q "cut.tar.gz" "$T/err"; is "message names the archive" $? 0
head -c 60 "$T/t.tar.xz" >"$T/cut.tar.xz"
fails 1 "truncated tar.xz" lc-cat -i text "$T/cut.tar.xz"
grep -q "cut.tar.xz: truncated xz or lzma input" "$T/err"; is "says it is truncated" $? 0
fails 1 "missing input" lc-cat -i text "$T/nope"

# cpio's and ar's signatures are text a file may start with: text, unless
# a whole archive header follows
# (longer than the headers checked: 76, 110 and 68 bytes)
printf '070707 was the release date of the first build, and 070701 the second; both are listed in the notes of the release' >"$T/date.txt"
printf '!<arch>\nis the magic string of ar archives, with a header of sixty bytes after it that ends in a backquote and a newline' >"$T/magic.txt"
printf '070701 is also the newc magic: this line is longer than its header of one hundred and ten bytes, to be sure' >"$T/newc.txt"
for f in date.txt magic.txt newc.txt; do
	ok "$f: starts with an archive signature" sh -c "lc-cat -i text '$T/$f' | lc-cat -o text >'$T/$f.out'"
	echo >>"$T/$f"         # -o text ends each document with a newline
	same "$f: read as text" "$T/$f" "$T/$f.out"
done
# an odc cpio and an ar archive, made by hand: one document a member
cpio_odc() {    # NAME DATA: one member's header, name and data
	printf '070707%06o%06o%06o%06o%06o%06o%06o%011o%06o%011o%s\0%s' 0 1 33188 0 0 1 0 0 \
		$((${#1} + 1)) ${#2} "$1" "$2"
}
{ cpio_odc a.txt 'first'; cpio_odc b.txt 'second'; cpio_odc 'TRAILER!!!' ''; } >"$T/two.cpio"
is "an odc cpio archive: its members" "$(lc-cat -i text "$T/two.cpio" | lc-cat -o info |
	awk -F'\t' '$1 == "doc" { printf "%s ", $3 }')" "a.txt b.txt "
{ printf '!<arch>\n'; printf '%-16s%-12s%-6s%-6s%-8s%-10s`\n' a.txt/ 0 0 0 100644 5; printf 'first\n'
  printf '%-16s%-12s%-6s%-6s%-8s%-10s`\n' b.txt/ 0 0 0 100644 6; printf 'second'; } >"$T/two.a"
is "an ar archive: its members" "$(lc-cat -i text "$T/two.a" | lc-cat -o text | tr '\n' ' ')" "first second "

done_testing
