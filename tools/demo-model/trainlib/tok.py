"""The tokenizer: a byte-level BPE trained with the `tokenizers` library, laid out like
Qwen2/3's (NFC, the Qwen split regex, byte-level with no prefix space), with the chat
special tokens at ids 0-2 and a chat template in tokenizer_config.json. The agent's
TextTokenizer (@huggingface/tokenizers + @huggingface/jinja) reads both files."""
import json
import os

import corpus_io

# Qwen2/Qwen3's pre-tokenizer pattern (contractions, letters, single digits, punctuation, spaces).
SPLIT_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def train(texts, vocab_size):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=list(corpus_io.SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    check(tok, vocab_size)
    return tok


def check(tok, vocab_size):
    """The properties the rest of the pipeline relies on; raises with what is wrong."""
    ids = [tok.token_to_id(t) for t in corpus_io.SPECIAL_TOKENS]
    if ids != [0, 1, 2]:
        raise RuntimeError(f"special tokens got ids {ids}, expected [0, 1, 2]")
    if tok.get_vocab_size() > vocab_size:
        raise RuntimeError(f"vocabulary has {tok.get_vocab_size()} tokens, over {vocab_size}")
    sample = corpus_io.render_chat([{"role": "user", "content": "What is a lighthouse? é ü 世界"}, {"role": "assistant", "content": "A tower.\n\n  Done!"}])
    enc = tok.encode(sample, add_special_tokens=False).ids
    if enc[0] != 1 or enc.count(2) != 2:
        raise RuntimeError(f"special tokens are not matched in text: {enc[:8]}")
    back = tok.decode(enc, skip_special_tokens=False)
    if back != sample:
        raise RuntimeError(f"decode(encode(x)) != x: {back!r} vs {sample!r}")


def encode_all(tok, texts, batch=4096):
    out = []
    for i in range(0, len(texts), batch):
        out.extend(e.ids for e in tok.encode_batch(texts[i:i + batch], add_special_tokens=False))
    return out


def tokenizer_config(max_length):
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True} for i, t in enumerate(corpus_io.SPECIAL_TOKENS)}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "bos_token": None,
        "chat_template": corpus_io.chat_template(),
        "clean_up_tokenization_spaces": False,
        "eos_token": corpus_io.IM_END,
        "errors": "replace",
        "model_max_length": max_length,
        "pad_token": corpus_io.EOT,
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def save(tok, out_dir, max_length):
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(max_length), f, indent=2, ensure_ascii=False)
        f.write("\n")
