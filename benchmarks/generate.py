"""Deterministic book documents of a given size for the benchmarks.

A book follows ``schemas/book.schema.json``::

    {title, metadata{...}, chapters: [{id "ch-N", title, sections: [{title, paragraphs: [{text, style}],
     sections: [...]}]}], tags}

Sizes are in MiB of compact JSON (``orjson.dumps``), as in ``notes/performance-baseline.md``:
1 MiB is about 36 chapters / 3,100 paragraphs, 10 MiB about 348 / 30,000, 100 MiB about
3,590 / 300,000. The text is English-like prose assembled from a fixed vocabulary with a seeded
``random.Random``, so the same (size, seed) always gives byte-identical output.

Usable on its own: ``python benchmarks/generate.py --size 10 --out book-10mb.json``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import orjson

__all__ = ["DEFAULT_SEED", "MIB", "book_stats", "make_book", "mid_paragraph_path", "paragraph"]

MIB = 1 << 20
DEFAULT_SEED = 20240611

# The styles a paragraph may have (the schema's enum); the generator uses only these.
STYLES = ("normal", "quote", "code", "aside", "epigraph")
_STYLE_WEIGHTS = (88, 5, 3, 3, 1)

_VOCABULARY = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there one all we their been has would when what will who more if no out so said "
    "about into than them can only other new some could time these two may then do first any like now my "
    "such make over our even most made after also did many before must through back years where much your "
    "way well down should because each just those people how too little state good very world still own see "
    "men work long here get both between life being under never day same another know while last might us "
    "great old year off come since against go came right used take three himself few house use during "
    "without again place around however home small found thought went say part once general high upon school "
    "every don does got united left number course war until always away something fact though water less "
    "public put think almost hand enough far took head yet government system better set told nothing night "
    "end why called didn eyes find going look asked later knew point next city give group toward young "
    "let room side social present given several order national second possible rather per face among form "
    "often important things looked early white john case become large big need four within felt along "
    "children saw best church ever least power development light thing seemed family interest want members "
    "mind country area others done turned although open god service certain kind problem began different "
    "door thus help sense means whole matter perhaps itself york times law human line above name example "
    "action company hands local show whether five history gave today either act feet across taken past "
    "quite anything seen having body experience death half really week words field car already themselves "
    "information tell together college shall money period held keep sure probably free real seems behind "
    "cannot miss political air question making office brought whose special heard major problems ago became "
    "federal moment study available known result street economic boy position reason change south board "
    "individual job areas society west close turn love community true court force full seem am policy voice "
    "lighthouse harbour letters winter river morning garden window silence journey memory storm village "
    "orchard lantern bridge mountain meadow library archive chapter manuscript candle shoreline compass"
)
_WORDS = _VOCABULARY.split()

_CHAPTER_NOUNS = ("Harbour", "Archive", "Orchard", "Winter", "Lantern", "River", "Crossing", "Letters",
                  "Storm", "Garden", "Bridge", "Silence", "Meadow", "Return", "Map", "Tide")
_CHAPTER_ADJECTIVES = ("Quiet", "Long", "Northern", "Lost", "Second", "Hidden", "Early", "Last", "Open",
                       "Broken", "Bright", "Distant", "Old", "Final", "Narrow", "Late")
_TAGS = ("fiction", "novel", "sea", "history", "family", "letters", "benchmark", "generated")


class _Prose:
    """Sentences and paragraphs of plausible English-like text (about 330 characters a paragraph)."""

    def __init__(self, rng: random.Random, pool_size: int = 4096) -> None:
        self._rng = rng
        self._sentences = [self._sentence() for _ in range(pool_size)]

    def _sentence(self) -> str:
        words = self._rng.choices(_WORDS, k=self._rng.randint(6, 19))
        text = " ".join(words)
        if self._rng.random() < 0.25:
            cut = self._rng.randint(2, len(words) - 2)
            text = " ".join(words[:cut]) + ", " + " ".join(words[cut:])
        end = self._rng.choices((".", "?", "!", ";"), weights=(90, 5, 3, 2))[0]
        return text[0].upper() + text[1:] + (end if end != ";" else ".")

    def paragraph_text(self) -> str:
        # four sentences of ~80 characters on average: ~330 characters, like the baseline's paragraphs
        count = self._rng.randint(2, 6)
        return " ".join(self._rng.choice(self._sentences) for _ in range(count))

    def title(self, words: int) -> str:
        return " ".join(w.capitalize() for w in self._rng.choices(_WORDS, k=words))


def paragraph(text: str, style: str = "normal") -> dict[str, Any]:
    """One paragraph object as the schema wants it."""
    return {"text": text, "style": style}


def _section(prose: _Prose, rng: random.Random, depth: int) -> dict[str, Any]:
    paragraphs = [paragraph(prose.paragraph_text(), rng.choices(STYLES, weights=_STYLE_WEIGHTS)[0])
                  for _ in range(rng.randint(4, 22))]
    subsections: list[dict[str, Any]] = []
    if depth == 0 and rng.random() < 0.15:
        subsections = [_section(prose, rng, depth + 1) for _ in range(rng.randint(1, 2))]
    return {"title": prose.title(rng.randint(2, 5)), "paragraphs": paragraphs, "sections": subsections}


def _chapter(prose: _Prose, rng: random.Random, number: int) -> dict[str, Any]:
    title = f"{rng.choice(_CHAPTER_ADJECTIVES)} {rng.choice(_CHAPTER_NOUNS)}"
    sections = [_section(prose, rng, 0) for _ in range(rng.randint(2, 9))]
    return {"id": f"ch-{number}", "title": title, "sections": sections}


def _metadata(size_mib: float) -> dict[str, Any]:
    return {
        "language": "en",
        "status": "draft",
        "edition": 1,
        "author": {"name": "Ada Benchmark", "email": "ada@example.com"},
        "created": "2024-06-11T09:30:00Z",
        "homepage": "https://example.com/books/benchmark-harbour",
        "contact": "editor@example.com",
        "isbn": "9783161484100",
        "keywords": ["benchmark", f"{size_mib:g} MiB"],
    }


def make_book(size_mib: float, seed: int = DEFAULT_SEED, *, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A book whose compact JSON is about ``size_mib`` MiB (it stops at the first chapter past the size).

    ``metadata`` replaces the generated metadata object (for schemas that want other members).
    """
    target = int(size_mib * MIB)
    rng = random.Random(seed)
    prose = _Prose(random.Random(seed + 1))
    book: dict[str, Any] = {
        "title": "The Benchmark Harbour",
        "metadata": metadata if metadata is not None else _metadata(size_mib),
        "chapters": [],
        "tags": list(_TAGS[:4]),
    }
    size = len(orjson.dumps(book))
    chapters: list[dict[str, Any]] = book["chapters"]
    while size < target:
        chapter = _chapter(prose, rng, len(chapters) + 1)
        chapters.append(chapter)
        size += len(orjson.dumps(chapter)) + 1
    return book


def mid_paragraph_path(book: dict[str, Any]) -> str:
    """JSON Pointer of the middle paragraph of the middle section of the middle chapter (no trailing field)."""
    chapters = book["chapters"]
    c = len(chapters) // 2
    sections = chapters[c]["sections"]
    s = len(sections) // 2
    p = len(sections[s]["paragraphs"]) // 2
    return f"/chapters/{c}/sections/{s}/paragraphs/{p}"


def book_stats(book: dict[str, Any]) -> dict[str, int]:
    """``chapters``, ``sections``, ``paragraphs`` and ``bytes`` (compact JSON) of a book."""
    sections = 0
    paragraphs = 0
    stack: list[dict[str, Any]] = [s for ch in book["chapters"] for s in ch["sections"]]
    while stack:
        section = stack.pop()
        sections += 1
        paragraphs += len(section["paragraphs"])
        stack.extend(section["sections"])
    return dict(chapters=len(book["chapters"]), sections=sections, paragraphs=paragraphs,
                     bytes=len(orjson.dumps(book)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a deterministic benchmark book as JSON.")
    parser.add_argument("--size", type=float, default=1.0, help="size in MiB (default 1)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, help="output file (default: stdout)")
    parser.add_argument("--indent", action="store_true", help="indent the JSON by 2 spaces")
    args = parser.parse_args(argv)
    book = make_book(args.size, args.seed)
    data = orjson.dumps(book, option=orjson.OPT_INDENT_2 if args.indent else 0)
    if args.out is None:
        sys.stdout.buffer.write(data + b"\n")
    else:
        args.out.write_bytes(data)
        stats = book_stats(book)
        print(f"{args.out}: {stats['bytes']:,} bytes, {stats['chapters']} chapters, "
              f"{stats['paragraphs']:,} paragraphs, leaf {mid_paragraph_path(book)}/text", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
