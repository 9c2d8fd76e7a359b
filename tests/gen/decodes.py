"""What the tokenizer goldens' generators share (tests/gen/bpe_*_ref.py)."""


def write_decodes(tok, ids, prefix):
    """PREFIX.decoded and PREFIX.decoded_keep: tok's decode of each id list,
    skip_special_tokens=True (its clean-up on), and False without clean-up,
    a line each."""
    with open(prefix + ".decoded", "w") as f1, open(prefix + ".decoded_keep", "w") as f2:
        for x in ids:
            f1.write(tok.decode(x, skip_special_tokens=True) + "\n")
            f2.write(tok.decode(x, skip_special_tokens=False, clean_up_tokenization_spaces=False)
                     + "\n")
