#!/bin/sh
# Many machines (lc(7)): a corpus dealt into shards with lc-cat --shard,
# summarized on two "hosts" by GNU parallel (--sshlogin, --workdir ...,
# --basefile, --transferfile, --return, --cleanup through an ssh stand-in
# that runs each command in a directory of its own on this machine) and
# merged with lc-cat --merge: the same summaries, document for document
# and byte for byte, as on one machine; by hand as lc(7) shows it, and
# with make summaries.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
[ -f "$SHARE/models/demo/config.json" ] || skip_all "no demo model in $SHARE/models/demo"
O=${O:-build}
unset MAKEFLAGS MFLAGS MAKELEVEL
DECODE='--max-new 6'

# One machine: the sample's chapters summarized (the stream and the text).
lc-chunk -q -p '^CHAPTER [0-9]+' "$SHARE/samples/sample.txt" >"$T/docs.lc"
ok "one machine" sh -c "lc-tokenize -q '$T/docs.lc' | lc-encode -q >'$T/enc.lc' &&
	lc-decode -q $DECODE -f stream '$T/enc.lc' >'$T/one.lc' &&
	lc-decode -q $DECODE '$T/enc.lc' >'$T/one.txt'"
is "five summaries" "$(lc-cat -o info "$T/one.lc" | grep -c '^doc')" 5

# make summaries on this machine (no HOSTS): the same stream.
mk() { make -s --no-print-directory -o all summaries O="$O" CORPUS="$SHARE/samples/sample.txt" \
	SUM_CUT='^CHAPTER [0-9]+' SUM_FLAGS="$DECODE" "$@"; }
ok "make summaries" mk SUMMARIES="$T/make1.lc"
grep -q "make1.lc: 5 summaries" "$T/out"; is "says how many" $? 0
same "make summaries = one machine" "$T/one.lc" "$T/make1.lc"
fails 2 "make summaries of a missing corpus" mk CORPUS="$T/nonexistent" SUMMARIES="$T/bad.lc"
is "leaves nothing" "$(ls "$T" | grep -c '^bad')" 0

fails 2 "SUM_FLAGS choosing a format" mk SUM_FLAGS="$DECODE -f jsonl" SUMMARIES="$T/bad.lc"
grep -q 'SUM_FLAGS: the summaries are a stream .*-o jsonl' "$T/err"; is "says why" $? 0

# A JSON Lines corpus: each line's "text" a document named by its "id".
printf '{"id": "a1", "text": "The first document. It has two sentences.", "abstract": "first"}\n{"id": "b2", "text": "Another one, \\u00e9t\\u00e9 and more.", "abstract": "another"}\n{"id": "c3", "text": "A third document about the sea.", "abstract": "the sea"}\n' >"$T/c.jsonl"
ok "one machine, JSON Lines" sh -c "lc-tokenize -q --jsonl --id id '$T/c.jsonl' | lc-encode -q |
	lc-decode -q $DECODE -f stream >'$T/jone.lc' && lc-tokenize -q --jsonl --id id '$T/c.jsonl' |
	lc-encode -q | lc-decode -q $DECODE -f jsonl >'$T/jone.jsonl'"
mkj() { make -s --no-print-directory -o all summaries O="$O" CORPUS="$T/c.jsonl" SUM_FLAGS="$DECODE" "$@"; }
ok "make summaries CORPUS=*.jsonl" mkj SUMMARIES="$T/jmake1.lc"
grep -q "jmake1.lc: 3 summaries" "$T/out"; is "three, one a line" $? 0
same "= one machine" "$T/jone.lc" "$T/jmake1.lc"
ok "lc-cat -o jsonl" sh -c "lc-cat -o jsonl '$T/jmake1.lc' >'$T/jmake1.jsonl'"
same "= lc-decode -f jsonl" "$T/jone.jsonl" "$T/jmake1.jsonl"
is "named by their ids" "$(lc-cat -o info "$T/jmake1.lc" | awk -F'\t' '$1 == "doc" { printf "%s ", $3 }')" "a1 b2 c3 "
ok "lc-rouge scores them against the corpus" lc-rouge --jsonl --ref abstract -b 0 -f tsv "$T/jmake1.lc" "$T/c.jsonl"
fails 2 "SUM_CUT with JSON Lines" mkj SUM_CUT='^x' SUMMARIES="$T/bad.lc"

need parallel || skip_all "GNU parallel is not installed (Debian: parallel)"
parallel --version 2>/dev/null | grep -q 'GNU parallel' || skip_all "parallel here is not GNU parallel"
need rsync || skip_all "rsync is not installed (GNU parallel moves files with it)"

# ssh HOST COMMAND..., as GNU parallel and rsync call it (options first,
# "--" or not): runs the command with sh in hosts/HOST, the host's home.
# A host named broken* has no lc programs on its PATH. SHELL is set as sshd
# sets it from the login's passwd entry: parallel's remote wrapper runs the
# job with $SHELL, and without it (CI runs with no SHELL) the job never runs.
mkdir "$T/hosts" "$T/home" "$T/work"
cat >"$T/fakessh" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do
	case $1 in
	-[BbcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
	-?*) shift ;;
	*) break ;;
	esac
done
host=$1
shift
[ "${1-}" = -- ] && shift
case $host in broken*) PATH=/usr/bin:/bin ;; esac
export SHELL=/bin/sh
mkdir -p "$(dirname "$0")/hosts/$host" && cd "$(dirname "$0")/hosts/$host" && exec sh -c "$*"
EOF
chmod +x "$T/fakessh"
# parallel keeps its own files under $HOME/.parallel: the test's home.
export HOME="$T/home"
# The model as the recipe sends it, from a copy (--cleanup may remove basefiles).
cp -R "$SHARE/models/demo" "$T/model"
M=$T/model

# The recipe of lc(7), by hand.
ok "--shard 3" sh -c "cd '$T/work' && lc-cat --shard 3 -O shard '$T/docs.lc'"
ok "parallel over two hosts" sh -c "cd '$T/work' && parallel --will-cite -S 1/host1,1/host2 \
	--ssh '$T/fakessh' --joblog '$T/joblog' --workdir ... --basefile '$M' \
	--transferfile {} --return {.}.sum --cleanup --halt now,fail=1 \
	\"lc-tokenize -q -m '$M' {} | lc-encode -q -m '$M' | lc-decode -q -m '$M' $DECODE -f stream >{.}.sum\" \
	::: shard.*.lc"
is "three summary files came back" "$(ls "$T/work" | grep -c '^shard\.[0-2]\.sum$')" 3
is "both hosts worked" "$(awk -F'\t' 'NR > 1 { print $2 }' "$T/joblog" | sort -u | tr '\n' ' ')" "host1 host2 "
is "the hosts keep no job files" "$(find "$T/hosts" -name 'shard*' | wc -l | tr -d ' ')" 0
ok "--merge" sh -c "lc-cat --merge '$T/work'/shard.*.sum >'$T/many.lc'"
same "merged = one machine, byte for byte" "$T/one.lc" "$T/many.lc"
lc-cat -o info "$T/one.lc" | grep '^doc' >"$T/one.docs"
lc-cat -o info "$T/many.lc" | grep '^doc' >"$T/many.docs"
same "document for document: positions, names, metadata" "$T/one.docs" "$T/many.docs"
ok "-o text" sh -c "lc-cat -o text '$T/many.lc' >'$T/many.txt'"
same "lc-cat -o text = lc-decode -f text on one machine" "$T/one.txt" "$T/many.txt"

# A lost shard is an error naming the document, never a shorter corpus.
rm "$T/work/shard.1.sum"
fails 1 "a lost shard" lc-cat --merge "$T/work"/shard.*.sum
grep -q 'document 1 is missing' "$T/err"; is "names it" $? 0

# make summaries HOSTS=...: the same recipe, the same stream.
printf '1/host1\n1/host2\n' >"$T/hostfile"
export PARALLEL="--ssh $T/fakessh"     # parallel's own variable for default options
ok "make summaries HOSTS=... SHARDS=4" mk HOSTS="$T/hostfile" SHARDS=4 MODEL="$M" SUMMARIES="$T/make2.lc"
same "make summaries over two hosts = one machine" "$T/one.lc" "$T/make2.lc"
is "no shards left behind" "$(ls "$T" | grep -c 'make2.lc.d')" 0
ok "JSON Lines over two hosts" mkj HOSTS="$T/hostfile" SHARDS=2 MODEL="$M" SUMMARIES="$T/jmake2.lc"
same "= one machine" "$T/jone.lc" "$T/jmake2.lc"
ok "lc-cat --merge -o jsonl by hand" sh -c "cd '$T/work' && lc-tokenize -q -m '$M' --jsonl --id id '$T/c.jsonl' |
	lc-cat --shard 2 -O j && for k in 0 1; do lc-encode -q -m '$M' j.\$k.lc |
	lc-decode -q -m '$M' $DECODE -f stream >j.\$k.sum || exit 1; done &&
	lc-cat --merge -o jsonl j.*.sum >'$T/jmerged.jsonl'"
same "= lc-decode -f jsonl on one machine" "$T/jone.jsonl" "$T/jmerged.jsonl"
printf '1/host1\n1/broken\n' >"$T/badhosts"
fails 2 "a failing host fails the run" mk HOSTS="$T/badhosts" SHARDS=4 MODEL="$M" SUMMARIES="$T/make3.lc"
is "and leaves no summaries" "$(ls "$T" | grep -c 'make3')" 0

done_testing
