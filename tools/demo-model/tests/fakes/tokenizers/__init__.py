"""A stand-in for the `tokenizers` package in train.py's dry run (tests/test_train_dryrun.py):
the API train.py calls, with a byte-level vocabulary and no merges. Not a tokenizer to use."""
import json

__version__ = "0.0-fake"


class Regex:
    def __init__(self, pattern):
        self.pattern = pattern


class _Config:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _Namespace:
    def __init__(self, **classes):
        self.__dict__.update(classes)


class _ByteLevelPre(_Config):
    @staticmethod
    def alphabet():
        return [chr(b) for b in range(256)]


models = _Namespace(BPE=_Config)
normalizers = _Namespace(NFC=_Config)
pre_tokenizers = _Namespace(Sequence=_Config, Split=_Config, ByteLevel=_ByteLevelPre)
decoders = _Namespace(ByteLevel=_Config)
processors = _Namespace(ByteLevel=_Config)


class _BpeTrainer:
    def __init__(self, vocab_size, min_frequency, show_progress, special_tokens, initial_alphabet):
        assert len(initial_alphabet) == 256
        self.special_tokens = special_tokens


trainers = _Namespace(BpeTrainer=_BpeTrainer)


class _Encoding:
    def __init__(self, ids):
        self.ids = ids


class Tokenizer:
    def __init__(self, model):
        self.model, self.specials = model, []
        self.normalizer = self.pre_tokenizer = self.decoder = self.post_processor = None

    def train_from_iterator(self, texts, trainer, length):
        assert length == len(texts)
        self.specials = list(trainer.special_tokens)

    def get_vocab_size(self):
        return len(self.specials) + 256

    def token_to_id(self, token):
        return self.specials.index(token) if token in self.specials else None

    def encode(self, text, add_special_tokens=True):
        ids, i = [], 0
        while i < len(text):
            for k, s in enumerate(self.specials):
                if text.startswith(s, i):
                    ids.append(k)
                    i += len(s)
                    break
            else:
                ids.extend(len(self.specials) + b for b in text[i].encode("utf-8"))
                i += 1
        return _Encoding(ids)

    def encode_batch(self, texts, add_special_tokens=True):
        return [self.encode(t, add_special_tokens) for t in texts]

    def decode(self, ids, skip_special_tokens=True):
        n, out, raw = len(self.specials), [], b""
        for i in ids:
            if i < n:
                out.append(raw.decode("utf-8", "replace"))
                raw = b""
                if not skip_special_tokens:
                    out.append(self.specials[i])
            else:
                raw += bytes([i - n])
        return "".join(out) + raw.decode("utf-8", "replace")

    def save(self, path):
        with open(path, "w") as f:
            json.dump({"fake": True, "added_tokens": self.specials}, f)
