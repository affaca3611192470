"""Meaning as vectors: the static word-embedding model (``wordllama``), what it makes of a text unit, and the
nearest vectors to a query's among many, in bounded memory.

This module needs the ``semantic`` extra (``wordllama``, which brings ``numpy``); :mod:`.semantic` imports it
only when that extra is installed. The model (256 dimensions, about 16 MB, inside the ``wordllama`` wheel) is
loaded once per process, at the first text embedded, and never downloads anything.

Vectors are unit length, so cosine similarity is a dot product; each is stored as 1,024 bytes (256 float32,
little-endian) beside the index, with an 8-byte digest of the text it was made from, so that a unit whose text
did not change (an array item that only shifted) keeps its vector instead of being embedded again.

A query across many vectors reads first their sign codes (:func:`codes`: one bit per dimension, whether it is
positive, 32 bytes a vector): the Hamming distance between the query's code and a vector's orders the vectors
roughly as their cosine does, at a fraction of the cost (:class:`Coarse`); the best few hundred are then scored
exactly from their float32 vectors (:class:`Nearest`).
"""

from __future__ import annotations

import hashlib
import heapq
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["CODE_BYTES", "DIMENSIONS", "Coarse", "Embedder", "Nearest", "codes", "digest", "embedder", "nearest_cells",
           "pack", "train_cells", "unpack"]

DIMENSIONS = 256
VECTOR_BYTES = DIMENSIONS * 4
CODE_BYTES = DIMENSIONS // 8
"""A vector's sign code: a bit per dimension."""
_MAX_CHARS = 2_000
"""A unit is embedded from its first 2,000 characters: a static model averages its words, and a longer text
only costs memory (a batch is padded to its longest text)."""
_BATCH = 32

Vectors = npt.NDArray[np.float32]


def digest(text: str) -> bytes:
    """The 8 bytes that tell whether a unit's text changed."""
    return hashlib.blake2b(text[:_MAX_CHARS].encode("utf-8", "surrogatepass"), digest_size=8).digest()


def pack(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def unpack(blobs: Sequence[bytes]) -> Vectors:
    """One matrix of the vectors in ``blobs`` (a row each)."""
    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), DIMENSIONS)


def codes(vectors: Vectors) -> npt.NDArray[np.uint8]:
    """The sign code of each vector (a row of :data:`CODE_BYTES` bytes): bit ``i`` set when dimension ``i`` is
    positive."""
    return np.packbits(np.asarray(vectors).reshape(-1, DIMENSIONS) > 0, axis=1)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint16)
"""Set bits of each byte (numpy before 2.0 has no ``bitwise_count``)."""


def _hamming(code_rows: npt.NDArray[np.uint8], query_code: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint16]:
    """The Hamming distance of each code row to the query's."""
    count = getattr(np, "bitwise_count", None)
    if count is None:
        summed: npt.NDArray[np.uint16] = _POPCOUNT[np.bitwise_xor(code_rows, query_code)].sum(axis=1, dtype=np.uint16)
        return summed
    words = np.bitwise_xor(code_rows.view(np.uint64), query_code.view(np.uint64))
    bits = count(words).astype(np.uint16)  # four words a row: adding the columns beats a reduction
    found: npt.NDArray[np.uint16] = bits[:, 0] + bits[:, 1] + bits[:, 2] + bits[:, 3]
    return found


class Coarse:
    """The ``k`` keys (int64) whose sign codes are nearest the query's (Hamming distance), fed block by block:
    memory is one block and ``k`` keys, whatever the total. Ties go to the key fed first."""

    def __init__(self, query: Vectors, k: int) -> None:
        self.code = codes(query)[0]
        self.k = k
        self.scored = 0
        self._keys = np.zeros(0, dtype=np.int64)
        self._distances = np.zeros(0, dtype=np.uint16)

    def feed(self, keys: npt.NDArray[np.int64], code_rows: npt.NDArray[np.uint8],
             skip: npt.NDArray[np.int64] | None = None) -> None:
        """``code_rows`` (n x 32) of the vectors ``keys``; those in ``skip`` are left out."""
        if not len(keys):
            return
        distances = _hamming(np.ascontiguousarray(code_rows), self.code)
        self.scored += len(keys)
        if skip is not None and len(skip):
            kept = ~np.isin(keys, skip)
            keys, distances = keys[kept], distances[kept]
        keys = np.concatenate([self._keys, keys])
        distances = np.concatenate([self._distances, distances])
        if len(keys) > self.k:
            order = np.argsort(distances, kind="stable")[:self.k]
            keys, distances = keys[order], distances[order]
        self._keys, self._distances = keys, distances

    def best(self) -> npt.NDArray[np.int64]:
        """The keys kept, nearest first."""
        return self._keys[np.argsort(self._distances, kind="stable")]


class Embedder:
    """The model, loaded at the first call, and a count of the texts embedded (what a write cost)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None
        self.texts_embedded = 0

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import wordllama
                from wordllama import WordLlama

                # The tokenizer and weights ship inside the package; pointed there, nothing is downloaded.
                self._model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
            return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length vectors of ``texts`` (a text without any known word gets the zero vector)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        model = self._model if self._model is not None else self._load()
        cut = [text[:_MAX_CHARS] for text in texts]
        raw = np.asarray(model.embed(cut, batch_size=_BATCH), dtype=np.float32)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        vectors: Vectors = np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
        with self._lock:
            self.texts_embedded += len(texts)
        return vectors


_EMBEDDER = Embedder()


def embedder() -> Embedder:
    """This process's one embedder."""
    return _EMBEDDER


class Nearest:
    """The ``k`` best (score, key) over vectors fed block by block: memory is one block, whatever the total."""

    def __init__(self, query: Vectors, k: int) -> None:
        self.query = np.asarray(query, dtype=np.float32).reshape(DIMENSIONS)
        self.k = k
        self._heap: list[tuple[float, int, Any]] = []
        self._seen = 0
        self.scored = 0

    def feed(self, keys: Sequence[Any], blobs: Sequence[bytes]) -> None:
        if not keys:
            return
        scores = unpack(blobs) @ self.query
        self.scored += len(keys)
        take = min(self.k, len(keys))
        best = np.argpartition(-scores, take - 1)[:take] if take < len(keys) else range(len(keys))
        for i in best:
            item = (float(scores[i]), -(self._seen + int(i)), keys[i])
            if len(self._heap) < self.k:
                heapq.heappush(self._heap, item)
            elif item[:2] > self._heap[0][:2]:
                heapq.heapreplace(self._heap, item)
        self._seen += len(keys)

    def feed_rows(self, rows: Iterable[tuple[Any, bytes]], block: int = 4_096) -> None:
        keys: list[Any] = []
        blobs: list[bytes] = []
        for key, blob in rows:
            keys.append(key)
            blobs.append(blob)
            if len(keys) >= block:
                self.feed(keys, blobs)
                keys, blobs = [], []
        self.feed(keys, blobs)

    def best(self) -> list[tuple[float, Any]]:
        """Highest score first; ties in the order fed."""
        return [(score, key) for score, _, key in sorted(self._heap, key=lambda item: item[:2], reverse=True)]


def train_cells(vectors: Vectors, cells: int, *, rounds: int = 8, seed: int = 30) -> Vectors:
    """``cells`` unit-length centroids of ``vectors`` (spherical k-means, seeded: the same vectors give the same
    cells), for the coarse stage of a query: only the units of the cells nearest the query are scored."""
    rng = np.random.default_rng(seed)
    cells = max(1, min(cells, len(vectors)))
    centroids: Vectors = vectors[rng.choice(len(vectors), cells, replace=False)].copy()
    for _ in range(rounds):
        assigned = nearest_cells(vectors, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assigned, vectors)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        filled = norms[:, 0] > 0
        centroids[filled] = sums[filled] / norms[filled]  # an empty cell keeps its centroid
    return centroids


def nearest_cells(vectors: Vectors, centroids: Vectors, block: int = 8_192) -> npt.NDArray[np.int64]:
    """The cell of each vector: its most similar centroid."""
    found = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), block):
        found[start:start + block] = np.argmax(vectors[start:start + block] @ centroids.T, axis=1)
    return found
