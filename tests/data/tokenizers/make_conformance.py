#!/usr/bin/env python3
"""Writes the tokenizer conformance data for tests/unit/text/test_tokenizer.cpp.

Needs the Hugging Face `tokenizers` package (written against v0.23); no network.
For each family it TRAINS a small tokenizer.json with `tokenizers` on a deterministic corpus built
here, using that family's normaliser / pre-tokenizer / decoder, then records HF's ids and decode
for >= 300 test strings:

  <out>/qwen2_style/   NFC + Split(Qwen2 regex) + ByteLevel(use_regex=False); merges as "a b" strings
  <out>/llama3_style/  Split(Llama 3 regex) + ByteLevel, ignore_merges, <|begin_of_text|> template; merges as pairs
  <out>/gpt2_style/    ByteLevel(use_regex=True) (GPT-2's regex inside ByteLevel)
  <out>/llama2_style/  Prepend("▁") + Replace(" ", "▁"), BPE byte_fallback with <0xNN> tokens, <s> template

each with tokenizer.json and cases.json ({"cases": [{"text", "ids", "decoded", "ids_special" (first 60)}]}),
about 150 KB per family.

It also looks for real Qwen2 / Llama 3 tokenizer.json files already on disk (the HF hub cache,
HF_HOME, TRANSFORMERS_CACHE) and prints "found" or "not found"; with --real-out DIR it writes cases
for each one found under DIR/<name>/ (not into the repository: those files are megabytes). Point the
test at them with NPUSIM_EXTRA_TOKENIZERS=DIR.

Usage: python3 tests/data/tokenizers/make_conformance.py [--out tests/data/tokenizers] [--real-out DIR]
"""
import argparse
import glob
import json
import os
import random
import unicodedata

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
         r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = ("the of and to in is that for it as was with be by on not he this are or his from at which but have an "
         "they you were her all she there would their we him been has when who will more no if out so said what up "
         "its about into than them can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back years where much your "
         "way well down should because each just those people how too little state good very make world still own "
         "see men work long get here between both life being under never day same another know while last might us "
         "tokenizer model inference compiler tensor kernel attention matrix").split()
ACCENTED = ("café naïve résumé façade coöperate jalapeño São Paulo Zürich Ærøskøbing Åland straße Łódź "
            "Dvořák Tiếng Việt đường phố Ελληνικά γλώσσα русский язык Ünïcödé crème brûlée piñata").split()
CJK = ["你好世界", "今天天气很好", "机器学习模型", "東京都", "日本語のテキスト", "ひらがなとカタカナ", "한국어 문장입니다",
       "中文，标点。", "漢字と仮名"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "🤖", "✨", "🎉🎉", "👋🏻 hi"]
CODE = ["def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
        "if x != None and y >= 3:\n\tprint(x)", "#include <vector>\nint main() { return 0; }",
        "const auto& [k, v] = *it;", "SELECT * FROM t WHERE id = 42;", "x = {'a': 1, \"b\": [2, 3]}",
        "   indented()\n      more()", "a_b_c = foo.bar(baz)->qux;", "<html><body>Hi</body></html>"]
NUMBERS = ["0", "42", "3.14159", "1,000,000", "2024-01-15", "12:30:45", "1e-9", "-273.15", "+1 (555) 123-4567",
           "١٢٣", "½ ¾", "Ⅻ", "100%", "$19.99", "0x1F", "123456789012"]
SPACES = ["  ", "\t", "\n", "\n\n", "\r\n", " \n ", "   \t  ", "\u00a0", "\u3000", "\u2003"]
CONTRACTIONS = ["don't", "I'm", "you're", "we've", "she'll", "it's", "I'd", "DON'T", "YOU'RE", "They'LL"]


def corpus(rng):
    lines = []
    for _ in range(6000):
        kind = rng.randrange(8)
        if kind < 3:
            lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 15))).capitalize() + rng.choice([".", "!", "?", ",", ""]))
        elif kind == 3:
            lines.append(rng.choice(CODE))
        elif kind == 4:
            lines.append(" ".join(rng.choice(ACCENTED + WORDS) for _ in range(rng.randint(2, 8))))
        elif kind == 5:
            lines.append(rng.choice(CJK) + rng.choice(["", "。", " ", "！"]) + rng.choice(CJK))
        elif kind == 6:
            lines.append(" ".join(rng.choice(NUMBERS + CONTRACTIONS + EMOJI) for _ in range(rng.randint(2, 6))))
        else:
            lines.append(rng.choice(WORDS) + rng.choice(SPACES) + rng.choice(WORDS + CJK + EMOJI))
    return lines


def test_strings(rng, specials):
    fixed = ["", " ", "  ", "\n", "\t", "a", "Hello world", "Hello  world", "Hello world ", " leading space",
             "trailing spaces   ", "line1\nline2\n\nline3", "tabs\tand\tspaces", "mixed \t\n \r\n ws",
             "x" * 300, "supercalifragilisticexpialidocious" * 4, "1234567890" * 5, "a1b2c3d4", "3.14 + 2.71 = 5.85",
             "!!!???...", "...hello", "'s 't 're", "'S 'T 'RE 'VE 'M 'LL 'D", "it'ſ", "don't stop", "\u00a0nbsp",
             "x\u3000y", "\u2028\u2029", "zero\u200bwidth", "soft\u00adhyphen", "\x00\x01\x7f control", "\U0001F600" * 5,
             "e\u0301", "Cafe\u0301", "A\u030a", "\u212b", "\u1100\u1161\u11a8", "a\u0323\u0302", "a\u0302\u0323"]
    for group in (ACCENTED, CJK, EMOJI, CODE, NUMBERS, SPACES, CONTRACTIONS):
        fixed += group
    fixed += [unicodedata.normalize("NFD", s) for s in ACCENTED]
    fixed += [unicodedata.normalize("NFD", " ".join(ACCENTED[i:i + 4])) for i in range(0, len(ACCENTED), 4)]
    for sp in specials:
        fixed += [sp, f"{sp}hello", f"hello{sp}", f"a {sp} b", f"{sp}{sp}", f"{sp}\nuser\n", f"x{sp[:-1]}"]
    pool = WORDS + ACCENTED + CJK + EMOJI + NUMBERS + SPACES + CONTRACTIONS + specials + ["\n", " ", "  "]
    while len(fixed) < 360:
        parts = [rng.choice(pool) for _ in range(rng.randint(1, 10))]
        sep = rng.choice(["", " ", " ", "\n"])
        s = sep.join(parts)
        if rng.random() < 0.2:
            s = unicodedata.normalize("NFD", s)
        fixed.append(s)
    return fixed


def write_set(out_dir, name, tok, specials, rng, string_merges=False):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    j = json.loads(tok.to_str())
    if string_merges:  # the "a b" form real Qwen2 files use
        j["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    text = json.dumps(j, ensure_ascii=False, separators=(",", ":"))
    tok = Tokenizer.from_str(text)  # ids come from exactly the file we write
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(text)
    write_cases(d, tok, test_strings(rng, specials))
    print(f"{name}: vocab {tok.get_vocab_size()}, wrote {d}")


def write_cases(d, tok, strings):
    cases = []
    for k, s in enumerate(strings):
        ids = tok.encode(s, add_special_tokens=False).ids
        cases.append({"text": s, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
        if k < 60:  # the post-processor's template is checked on a few cases; files stay small
            cases[-1]["ids_special"] = tok.encode(s, add_special_tokens=True).ids
    with open(os.path.join(d, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": cases}, f, ensure_ascii=False, separators=(",", ":"))
    print(f"  {len(cases)} cases, {sum(c['decoded'] == c['text'] for c in cases)} round-trip in HF")


def byte_level_tokenizer(pattern, ignore_merges, nfc, specials, vocab_size, rng):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    if pattern is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(rng), trainer=trainer)
    return tok


def llama2_tokenizer(vocab_size, rng):
    specials = ["<unk>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  limit_alphabet=120, max_token_length=16)
    tok.train_from_iterator(corpus(rng), trainer=trainer)
    # Llama 2's layout: <unk> <s> </s>, then <0x00>..<0xFF> as ordinary vocabulary, then the rest.
    j = json.loads(tok.to_str())
    old = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for t, _ in old:
        if t not in vocab:
            vocab[t] = len(vocab)
    j["model"]["vocab"] = vocab
    for a in j["added_tokens"]:
        a["id"] = vocab[a["content"]]
    tok = Tokenizer.from_str(json.dumps(j, ensure_ascii=False))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok, specials


def find_real(real_out):
    roots = [os.path.expanduser("~/.cache/huggingface"), os.environ.get("HF_HOME", ""),
             os.environ.get("TRANSFORMERS_CACHE", ""), os.environ.get("HF_HUB_CACHE", "")]
    try:
        import transformers
        roots.append(os.path.dirname(transformers.__file__))
    except ImportError:
        print("transformers: not installed")
    found = []
    for r in filter(None, roots):
        for p in glob.glob(os.path.join(r, "**", "tokenizer.json"), recursive=True):
            low = p.lower()
            if any(k in low for k in ("qwen", "llama", "mistral")):
                found.append(p)
    if not found:
        print("real Qwen2 / Llama tokenizer.json: not found (searched: " + ", ".join(filter(None, roots)) + ")")
    rng = random.Random(7)
    for p in sorted(set(found)):
        print("real tokenizer.json found:", p)
        if real_out:
            # ".../models--Qwen--Qwen2.5-0.5B/snapshots/<hash>/tokenizer.json" -> "real_Qwen--Qwen2.5-0.5B_<n>"
            repo = next((x[len("models--"):] for x in p.split(os.sep) if x.startswith("models--")), "local")
            d = os.path.join(real_out, f"real_{repo}_{len(os.listdir(real_out)) if os.path.isdir(real_out) else 0}")
            os.makedirs(d, exist_ok=True)
            tok = Tokenizer.from_file(p)
            with open(p, encoding="utf-8") as f, open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as g:
                g.write(f.read())
            specials = [a.content for a in tok.get_added_tokens_decoder().values()][:8]
            write_cases(d, tok, test_strings(rng, specials))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--real-out", default="")
    args = ap.parse_args()
    import tokenizers
    print("tokenizers", tokenizers.__version__)

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = byte_level_tokenizer(QWEN2, False, True, specials, 2000, random.Random(1))
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    write_set(args.out, "qwen2_style", tok, specials, random.Random(11), string_merges=True)

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    tok = byte_level_tokenizer(LLAMA3, True, False, specials, 2000, random.Random(2))
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                       special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    write_set(args.out, "llama3_style", tok, specials, random.Random(12))

    specials = ["<|endoftext|>"]
    tok = byte_level_tokenizer(None, False, False, specials, 2000, random.Random(3))
    write_set(args.out, "gpt2_style", tok, specials, random.Random(13))

    tok, specials = llama2_tokenizer(2000, random.Random(4))
    write_set(args.out, "llama2_style", tok, specials, random.Random(14))

    find_real(args.real_out)


if __name__ == "__main__":
    main()
