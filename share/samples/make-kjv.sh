#!/bin/sh
# Writes the King James Bible as plain text (one verse per line, "BOOK"
# and "CHAPTER" headings) from Debian's bible-kjv package.
set -eu
names="Ge:Genesis Exo:Exodus Lev:Leviticus Num:Numbers Deu:Deuteronomy Josh:Joshua Jdgs:Judges Ruth:Ruth
1Sm:1_Samuel 2Sm:2_Samuel 1Ki:1_Kings 2Ki:2_Kings 1Chr:1_Chronicles 2Chr:2_Chronicles Ezra:Ezra
Neh:Nehemiah Est:Esther Job:Job Psa:Psalms Prv:Proverbs Eccl:Ecclesiastes SSol:Song_of_Solomon
Isa:Isaiah Jer:Jeremiah Lam:Lamentations Eze:Ezekiel Dan:Daniel Hos:Hosea Joel:Joel Amos:Amos
Obad:Obadiah Jonah:Jonah Mic:Micah Nahum:Nahum Hab:Habakkuk Zep:Zephaniah Hag:Haggai Zec:Zechariah
Mal:Malachi Mat:Matthew Mark:Mark Luke:Luke John:John Acts:Acts Rom:Romans 1Cor:1_Corinthians
2Cor:2_Corinthians Gal:Galatians Eph:Ephesians Phi:Philippians Col:Colossians 1Th:1_Thessalonians
2Th:2_Thessalonians 1Tim:1_Timothy 2Tim:2_Timothy Titus:Titus Phmn:Philemon Heb:Hebrews Jas:James
1Pet:1_Peter 2Pet:2_Peter 1Jn:1_John 2Jn:2_John 3Jn:3_John Jude:Jude Rev:Revelation"
echo "THE HOLY BIBLE: KING JAMES VERSION"
bible -f 'Gen1:1-Rev22:21' | awk -v names="$names" '
BEGIN { n = split(names, a, /[ \n]+/); for (i = 1; i <= n; i++) { split(a[i], p, ":"); gsub("_", " ", p[2]); full[p[1]] = p[2] } }
{
	ref = $1; text = substr($0, length(ref) + 2)
	match(ref, /^[0-9]?[A-Za-z]+/); book = substr(ref, 1, RLENGTH)
	split(substr(ref, RLENGTH + 1), cv, ":")
	if (book != lastbook) { printf "\nBOOK %s\n", toupper(full[book]); lastbook = book; lastch = 0 }
	if (cv[1] != lastch) { printf "\nCHAPTER %s\n\n", cv[1]; lastch = cv[1] }
	print text
}'
