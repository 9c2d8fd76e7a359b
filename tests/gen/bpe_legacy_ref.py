#!/usr/bin/python3
"""Goldens for tokenizers saved before transformers 4.34, whose
tokenizer_config.json has no added_tokens_decoder: Hugging Face
transformers 4.36.2's slow BartTokenizer then takes the added tokens from
added_tokens.json (each special only where its text is one of the roles or
additional_special_tokens that tokenizer_config.json and
special_tokens_map.json name, never stripping), and then, where the
directory has one, from tokenizer.json's "added_tokens" (with their own
flags; an id both files give takes tokenizer.json's).

usage: PYTHONPATH=<stubs>:<transformers 4.36.2 src> bpe_legacy_ref.py SAVED OUT
  SAVED  tests/data/bart/tokenizer/specials/saved (made by transformers:
         bart_small with <z> 1000, <q> 1001 additional special, <w> 1002)
  OUT    tests/data/bart/tokenizer/legacy: writes NAME/ (every file of the
         tokenizer but vocab.json and merges.txt, which are SAVED's),
         NAME.ids (the ids of cases.nul's texts, with <s> and </s>),
         NAME.in (id lines, for tokjson also lines with <t>),
         NAME.decoded and NAME.decoded_keep (their decodes,
         skip_special_tokens=True with clean-up, and False without)
(the stubs as tests/gen/t5_extra_ref.py says.)

Variants of SAVED with added_tokens_decoder taken out of its config:
  plain      added_tokens.json and special_tokens_map.json as saved: <q>
             named in additional_special_tokens, <z> and <w> not special
  tokjson    and a tokenizer.json whose added_tokens (read for nothing
             else) make <z> lstrip and special, and add <t> 1003 rstrip
  cfgroles   no special_tokens_map.json; the config names <w> in
             additional_special_tokens and its mask_token is an
             {"__type": "AddedToken", ...} object, as older versions wrote
  maskjson   added_tokens.json also lists <mask> 999, and no file names a
             mask_token: the constructor adds the class's default role
             again, lstrip, over added_tokens.json's flags (none)
  masknamed  the same with special_tokens_map.json's mask_token (lstrip)
             kept: again the role's flags
  overlap    added_tokens.json also lists tokens that overlap or are each
             other's prefixes (<a, <ab, <abc>, ab, b<, \u00e9, \u00e9a, <, zz):
             the longest at the leftmost place is taken
  dupid      added_tokens.json gives <w>'s id to <y> too, after it: by id,
             the later wins (<w> is no added token then)
  tokdup     tokenizer.json gives <w>'s id to <v>
  addobj     special_tokens_map.json's additional <q> with lstrip
  addvocab   special_tokens_map.json's additional tokens also name "ace",
             a token of vocab.json in neither added file
  union      tokenizer_config.json's additional_special_tokens name <w>,
             special_tokens_map.json's <q>: the legacy files take both
And with tokenizer_config.json's added_tokens_decoder kept (4.34 and on):
  smignored  special_tokens_map.json's additional tokens name <w> (the
             config's <q>): transformers reads no special_tokens_map.json
             then
  cfgvocab   tokenizer_config.json's additional_special_tokens also name
             ace
  smrole     special_tokens_map.json's eos_token is <w> (the config's
             </s>)
  invocab    (legacy) added_tokens.json gives <in> the id of vocab.json's
             "x", 91, and special_tokens_map.json names it an additional
             special token: kept, id 91 decodes as <in>
Special tokens that no file numbers (neither vocab.json nor an added
token): the constructor adds them after the others (_add_tokens), the
named roles first (bos, eos, unk, sep, pad, cls, mask), then the
additional ones, a text once; BartTokenizer wraps a text in cls_token ...
sep_token:
  newadd     the config's additional_special_tokens also name <nw> and
             <nx> (1003, 1004)
  newrole    the config's cls_token <cl>, sep_token <sp>, additional <q>,
             <nw> and <sp> again: <sp> 1003, <cl> 1004, <nw> 1005; texts
             wrapped in <cl> ... <sp>
  newlegacy  (legacy) special_tokens_map.json's sep_token <sp> (the
             config's stays </s>: the map's replaces it) and additional
             <nm>, the config's additional <nc>
  newmask    (legacy) special_tokens_map.json's mask_token <mk>, lstrip
And single_word (4.34 and on):
  single     the config's added_tokens_decoder makes <w> single_word, <z>
             single_word and lstrip, <q> single_word and rstrip, and
             <mask> single_word too (lstrip): a token next to a part that
             does not end (or begin) with a space joins it as text"""
import json
import os
import shutil
import sys
import warnings

import oracle_compat  # noqa: F401 (patches transformers' AddedToken)
from transformers import BartTokenizer

from decodes import write_decodes

warnings.simplefilter("ignore")
saved, out = sys.argv[1], sys.argv[2]
CASES = ["x<z>y", "a <q> b", "c<w>d", "<z> <w> <q>", " <t>  x", "q<t>r <z>",
         "<s>in</s> <w> <mask> x", "<z><z>", "  <w>  ", "\u00e9<q>\u00fc", "a  <z>  b <t> c",
         "<abc><ab<a<", "xab<abc>ab", "\u00e9a\u00e9\u00e9ab", "zzz<zz>", "b<b<<abcd",
         "face ace aces", "x <y> <v> y", "q  <q>  r", "a <in> b x",
         "a<nw>b <nx> c<cl>", "x<sp>y <nc> <nm> z", "a <mk> b<mk>  <mk>", "<sp><cl><nw>",
         "a<w> b", "a <w>b", "<w><w><w>", "x <z>y", "x<q>  y", "<q>x", "x<z>", "<s><w></s>",
         "a\t<w>b", "x  <z>", "<q> <w>", "y<mask> a <mask>b", "<w>"]
IDS = [[0, 91, 1000, 92, 2], [0, 1000, 1001, 1002, 2], [1000, 1000, 91, 1002, 1002],
       [0, 91, 1, 1001, 92, 2], [3, 999, 1000, 1001, 1002, 4], [68, 1002, 69, 1000, 70]]
IDS_T = [[0, 91, 1003, 92, 2], [3, 999, 1000, 1003, 1003, 1001, 4], [1003, 68, 1000, 69, 1003]]
ACE = json.load(open(os.path.join(saved, "vocab.json")))["ace"]
IDS_ACE = [[0, ACE, 91, ACE, 2], [ACE, 1001, ACE, 1002]]
# the new ids each numbers (1003 on)
NEW = {"newadd": 2, "newrole": 3, "newlegacy": 3, "newmask": 1}


def ids_new(n):
    """Id lines over the n new ids."""
    top = 1003 + n - 1
    return [[0, 1003, 68, top, 2], [top, 69, 1003, top, 70], [1003, 1003], list(range(1003, top + 1))]
TOKJSON_ADDED = [
    {"id": 1000, "content": "<z>", "single_word": False, "lstrip": True, "rstrip": False,
     "normalized": False, "special": True},
    {"id": 1003, "content": "<t>", "single_word": False, "lstrip": False, "rstrip": True,
     "normalized": True, "special": False}]


def edit_json(d, fn, f):
    x = json.load(open(os.path.join(d, fn)))
    f(x)
    json.dump(x, open(os.path.join(d, fn), "w"), indent=1)


def add_special(name):
    def f(sm):
        sm["additional_special_tokens"].append(name)
    return f


def variant(name):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = json.load(open(os.path.join(saved, "tokenizer_config.json")))
    if name not in ("smignored", "cfgvocab", "smrole", "newadd", "newrole", "single"):
        del cfg["added_tokens_decoder"]
    for fn in ("added_tokens.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(saved, fn), d)
    if name == "tokjson":
        json.dump({"version": "1.0", "added_tokens": TOKJSON_ADDED},
                  open(os.path.join(d, "tokenizer.json"), "w"), indent=1)
    if name == "cfgroles":
        os.remove(os.path.join(d, "special_tokens_map.json"))
        cfg["additional_special_tokens"] = ["<w>"]
        cfg["mask_token"] = {"__type": "AddedToken", "content": "<mask>", "lstrip": True,
                             "normalized": True, "rstrip": False, "single_word": False}
    if name == "overlap":
        at = json.load(open(os.path.join(d, "added_tokens.json")))
        for i, t in enumerate(["<a", "<ab", "<abc>", "ab", "b<", "\u00e9", "\u00e9a", "<", "zz"]):
            at[t] = 1003 + i
        json.dump(at, open(os.path.join(d, "added_tokens.json"), "w"), indent=1)
    if name == "dupid":
        edit_json(d, "added_tokens.json", lambda at: at.update({"<y>": 1002}))
    if name == "tokdup":
        json.dump({"version": "1.0", "added_tokens": [
            {"id": 1002, "content": "<v>", "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": True, "special": False}]},
            open(os.path.join(d, "tokenizer.json"), "w"), indent=1)
    if name == "addobj":
        edit_json(d, "special_tokens_map.json",
                  lambda sm: sm["additional_special_tokens"][0].update(lstrip=True))
    if name == "addvocab":
        edit_json(d, "special_tokens_map.json", add_special("ace"))
    if name == "union":
        cfg["additional_special_tokens"] = ["<w>"]
    if name == "smignored":
        edit_json(d, "special_tokens_map.json",
                  lambda sm: sm.update(additional_special_tokens=["<w>"]))
    if name == "invocab":
        edit_json(d, "added_tokens.json", lambda at: at.update({"<in>": 91}))
        edit_json(d, "special_tokens_map.json", add_special("<in>"))
    if name == "smrole":
        edit_json(d, "special_tokens_map.json", lambda sm: sm.update(eos_token="<w>"))
    if name == "cfgvocab":
        cfg["additional_special_tokens"] = ["<q>", "ace"]
    if name in ("maskjson", "masknamed"):
        at = json.load(open(os.path.join(d, "added_tokens.json")))
        at["<mask>"] = 999
        json.dump(at, open(os.path.join(d, "added_tokens.json"), "w"), indent=1)
        del cfg["mask_token"]
    if name == "maskjson":
        sm = json.load(open(os.path.join(d, "special_tokens_map.json")))
        del sm["mask_token"]
        json.dump(sm, open(os.path.join(d, "special_tokens_map.json"), "w"), indent=1)
    if name == "newadd":
        cfg["additional_special_tokens"] = ["<q>", "<nw>", "<nx>"]
    if name == "newrole":
        cfg.update(cls_token="<cl>", sep_token="<sp>", additional_special_tokens=["<q>", "<nw>", "<sp>"])
    if name == "newlegacy":
        cfg["additional_special_tokens"] = ["<nc>"]
        edit_json(d, "special_tokens_map.json", lambda sm: sm.update(sep_token="<sp>"))
        edit_json(d, "special_tokens_map.json", add_special("<nm>"))
    if name == "newmask":
        edit_json(d, "special_tokens_map.json", lambda sm: sm.update(mask_token={
            "content": "<mk>", "lstrip": True, "normalized": True, "rstrip": False,
            "single_word": False}))
    if name == "single":
        dec = cfg["added_tokens_decoder"]
        for i, fl in (("1002", {}), ("1000", {"lstrip": True}), ("1001", {"rstrip": True}),
                      ("999", {"lstrip": True})):
            dec[i].update(single_word=True, **fl)
    json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=1)
    return d


with open(os.path.join(out, "cases.nul"), "w", encoding="utf-8", newline="") as f:
    f.write("\0".join(CASES))
NAMES = ("plain", "tokjson", "cfgroles", "maskjson", "masknamed", "overlap", "dupid", "tokdup",
         "addobj", "addvocab", "union", "smignored", "cfgvocab", "smrole", "invocab") + tuple(NEW) + (
         "single",)
for name in NAMES:
    d = variant(name)
    work = os.path.join(out, "_work")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(d, work)
    for fn in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(saved, fn), work)
    t = BartTokenizer.from_pretrained(work)
    shutil.rmtree(work)
    with open(os.path.join(out, name + ".ids"), "w") as f:
        for c in CASES:
            f.write(" ".join(map(str, t(c)["input_ids"])) + "\n")
    ids = IDS + (IDS_T if name == "tokjson" else []) + IDS_ACE + (ids_new(NEW[name]) if name in NEW else [])
    with open(os.path.join(out, name + ".in"), "w") as f:
        for x in ids:
            f.write(" ".join(map(str, x)) + "\n")
    write_decodes(t, ids, os.path.join(out, name))
