"""Search quality, measured: recall at 5 of full-text, semantic and hybrid search over generated books.

The corpus is made here (seeded): books whose sections each talk about one topic. 22 target sections
each answer two queries: a paraphrase that shares no content word with the section (how an agent asks
"where does this book talk about keeping a lighthouse lit"), and a lexical query that reuses the
section's own words. The other sections are distractors, some of them sharing a query's words with a
different meaning ("the lighthouse on the old postcard"). A query is answered when a hit of its top 5
lies in its target section; recall@5 is the share of queries answered (each query has one relevant
section, so recall@5 is the hit rate at 5).

    python benchmarks/search_quality.py [--books N] [--approximate]

prints recall@5 per mode and per kind of query, and the queries each mode missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: this directory first on sys.path, then the checkout's src
    import common  # noqa: F401

__all__ = ["TARGETS", "Corpus", "Query", "make_corpus", "recall_at_k"]


@dataclass(frozen=True)
class Target:
    title: str
    text: str
    paraphrase: str
    """Asks for the section in words it does not use."""
    lexical: str
    """Asks for it with its own words."""


TARGETS: tuple[Target, ...] = (
    Target("Evenings at the tower",
           "Every evening the keeper climbed the stairs, trimmed the wick and polished the great lens so the "
           "lamp would burn until dawn for passing ships.",
           "keeping a lighthouse lit", "keeper trimmed the wick of the lamp"),
    Target("The loaf",
           "Knead the dough for ten minutes, leave it to rise overnight, then bake it in a hot oven until the "
           "crust turns golden.",
           "preparing bread at home", "knead the dough and leave it to rise"),
    Target("Summer in the orchard",
           "The hives hum among the apple trees; in late summer we lift the frames, uncap the comb and spin "
           "out the honey.",
           "caring for a bee colony", "spin the honey from the comb"),
    Target("Rough water",
           "When the gale rose we reefed the mainsail, lashed the tiller and rode out the waves until the wind "
           "dropped at first light.",
           "surviving a storm on a boat", "reefed the mainsail in the gale"),
    Target("On the vine",
           "Pinch out the side shoots, tie each stem to a cane and water at the roots so the fruit ripens red.",
           "growing tomatoes in a greenhouse", "tie each stem to a cane"),
    Target("First moves",
           "White pushes the king's pawn two squares, develops the knights toward the centre and castles "
           "early to guard the king.",
           "how to begin a game of chess", "develops the knights and castles early"),
    Target("When the heart stops",
           "Press hard and fast in the middle of the chest, about twice a second, and give two rescue breaths "
           "after every thirty compressions.",
           "reviving someone who has collapsed", "thirty compressions and two rescue breaths"),
    Target("April",
           "Gather your receipts and payslips, declare every source of income and send the return to the "
           "revenue office before the deadline.",
           "filing taxes each year", "declare every source of income"),
    Target("A faint smudge",
           "On a moonless night point the telescope at the faint smudge near Cassiopeia: the Andromeda galaxy "
           "is the most distant object the naked eye can see.",
           "stargazing after dark", "point the telescope at the Andromeda galaxy"),
    Target("Four minutes",
           "Grind the beans coarse, pour water just off the boil over the grounds and push the plunger down "
           "after four minutes.",
           "making a cup of coffee", "grind the beans and push the plunger"),
    Target("Ribbing",
           "Cast on forty stitches, work the ribbing in knit two purl two, then switch to the larger needles "
           "for the body of the sweater.",
           "making a woollen jumper by hand", "cast on forty stitches"),
    Target("The puncture",
           "Lever the tyre off the rim, find the hole by listening for the hiss, patch the inner tube and "
           "pump it back up.",
           "fixing a flat on a bicycle", "patch the inner tube"),
    Target("Autumn wires",
           "Each autumn the swallows gather on the wires and fly south across the desert to winter in Africa, "
           "returning in spring to the same barn.",
           "seasonal journeys of birds", "swallows fly south to Africa"),
    Target("The mountain woke",
           "Magma rose beneath the mountain for weeks before the eruption sent ash and lava down its slopes "
           "and buried the villages below.",
           "a volcano exploding", "ash and lava buried the villages"),
    Target("Curds",
           "Warm the milk, add rennet to set the curd, cut it into cubes, drain the whey and press the curds "
           "into moulds to age in a cool cellar.",
           "how cheese is made", "drain the whey from the curd"),
    Target("Scales",
           "Play the scales slowly with a metronome, keep the wrists loose and the fingers curved, and only "
           "raise the tempo once every note is even.",
           "practising the piano", "play the scales with a metronome"),
    Target("Kindling",
           "Clear a ring of bare earth, stack dry kindling over a twist of birch bark and strike the match on "
           "the windward side.",
           "starting a campfire in the woods", "dry kindling over birch bark"),
    Target("Lights out",
           "Keep the bedroom dark and cool, put away screens an hour before bed and wake at the same time "
           "every morning, even at weekends.",
           "tips for resting better at night", "keep the bedroom dark and cool"),
    Target("Nine o'clock departure",
           "The night train leaves the capital at nine; the sleeping car attendant brings tea at six as the "
           "carriages roll into the mountains.",
           "an overnight railway journey", "the sleeping car attendant brings tea"),
    Target("The heap",
           "Layer green kitchen scraps with brown leaves, turn the heap every week and in a few months it "
           "becomes dark crumbly soil for the beds.",
           "turning food waste into fertiliser", "turn the heap of kitchen scraps"),
    Target("Sit",
           "Reward the puppy with a treat the instant it sits, keep sessions short and never punish it for "
           "coming back when called.",
           "teaching a young dog to obey", "reward the puppy with a treat"),
    Target("Washes",
           "Wet the paper first, then drop thin washes of pigment and let them bleed into each other before "
           "lifting highlights with a dry brush.",
           "watercolour painting technique", "thin washes of pigment on wet paper"),
)

# Distractors: sections about other things; several share a word with a paraphrase, in another sense.
DISTRACTORS: tuple[tuple[str, str], ...] = (
    ("The postcard", "The lighthouse on the old postcard was painted red and white, and the shop by the harbour "
                     "sold hundreds of them to tourists every summer."),
    ("Market day", "On market day the square fills with stalls selling bread, cheese and cut flowers, and the "
                   "church bell rings at noon."),
    ("The town hall", "The town hall was rebuilt in stone after the fire, with a clock above the door and a "
                      "council chamber on the first floor."),
    ("Letters home", "She wrote letters home every Sunday, describing the weather, her landlady and the price of "
                     "coal, and never once mentioned the war."),
    ("The boat race", "The boat race is held each year on the river; crowds line the bank and the winning crew "
                      "is thrown into the water."),
    ("Old maps", "The old maps show a road where the reservoir now lies, and a chapel whose bell can still be "
                 "heard, they say, on calm nights."),
    ("Green paint", "The green paint on the shutters faded to grey within three winters, so the owner chose a "
                    "darker shade and a better primer."),
    ("The game", "The game ended in a draw after extra time, and the supporters walked home in the rain "
                 "arguing about the referee."),
    ("Birds on stamps", "The post office issued a set of stamps with birds on them, and collectors queued "
                        "before the doors opened."),
    ("The railway company", "The railway company went bankrupt in 1923; its shares became worthless and its "
                            "directors moved abroad."),
    ("The dog show", "At the dog show the judges looked at teeth, coat and gait, and a poodle from the city took "
                     "the silver cup."),
    ("Waste collection", "The council changed the day of the waste collection, and for weeks the bins stood "
                         "full on the pavement."),
    ("The coffee house", "The coffee house opposite the bank was where merchants met to read the shipping news "
                         "and sign insurance contracts."),
    ("Night shift", "Nurses on the night shift walk the wards with torches, checking charts and answering "
                    "bells until the day staff arrive."),
    ("The piano tuner", "The piano tuner came on Thursdays, drank two cups of tea and complained about the damp "
                        "in the parlour."),
    ("A game of cards", "They played cards at the kitchen table until midnight, betting matchsticks and "
                        "arguing over the rules."),
    ("Greenhouse gases", "Carbon dioxide and methane trap heat in the atmosphere, and their concentration has "
                         "risen since the industrial revolution."),
    ("The colony", "The colony was founded by settlers who crossed the ocean in three ships and built a fort "
                   "on the hill above the bay."),
    ("Bicycle sales", "Sales of bicycles doubled in the city after the new lanes opened, and two shops opened "
                      "on the high street."),
    ("The storm drain", "The storm drain under the road had not been cleared for years, so the street flooded "
                        "after every heavy shower."),
    ("Tax records", "Tax records from the seventeenth century list the number of hearths in each house, which "
                    "tells historians how large the village was."),
    ("The woods", "The woods behind the school belonged to the estate, and children were forbidden to climb "
                  "the wall, which made them climb it all the more."),
    ("Cheese prices", "The price of cheese rose sharply after the dry summer, because the herds gave less milk "
                      "and feed had to be bought in."),
    ("A collapsed bridge", "The bridge collapsed under the weight of the floodwater, and the ferry ran again for "
                           "the first time in fifty years."),
    ("The chess club", "The chess club meets in the library on Tuesdays; its oldest member has been coming for "
                       "sixty years."),
    ("Railway timetables", "Printed timetables listed every station on the line, with the connections to the "
                           "coast marked in bold type."),
    ("Volcanic soil", "Vineyards on the old volcanic soil give a mineral wine that sells well abroad."),
    ("Dark matter", "Most of the matter in the universe cannot be seen; its presence is inferred from the way "
                    "galaxies rotate."),
    ("A jumper for sale", "The charity shop had a jumper for sale at two pounds, hand-made by a woman who "
                          "donated one every month."),
    ("The painter's widow", "After the painter died his widow sold the studio, but kept the unfinished "
                            "portrait of their daughter."),
)


@dataclass(frozen=True)
class Query:
    text: str
    kind: str
    """paraphrase | lexical"""
    book: int
    """The index of the book that holds the target section."""
    section: str
    """The target section's JSON Pointer in that book."""


@dataclass(frozen=True)
class Corpus:
    books: list[dict[str, Any]]
    queries: list[Query]


def _book(index: int, sections: list[tuple[str, str]]) -> dict[str, Any]:
    chapters = [{"id": f"ch-{c + 1}", "title": f"Chapter {c + 1}",
                 "sections": [{"title": title, "paragraphs": [{"text": text}]} for title, text in sections[c::3]]}
                for c in range(3) if sections[c::3]]
    return {"title": f"Collected pieces, volume {index + 1}", "metadata": {"language": "en", "status": "draft",
                                                                            "edition": 1},
            "chapters": chapters}


def make_corpus(books: int = 8, seed: int = 30) -> Corpus:
    """The target and distractor sections dealt at random over ``books`` books; the queries of each target."""
    rng = random.Random(seed)
    pieces: list[tuple[str, str, int | None]] = [(t.title, t.text, i) for i, t in enumerate(TARGETS)]
    pieces += [(title, text, None) for title, text in DISTRACTORS]
    rng.shuffle(pieces)
    dealt: list[list[tuple[str, str, int | None]]] = [pieces[b::books] for b in range(books)]
    corpus_books: list[dict[str, Any]] = []
    queries: list[Query] = []
    for b, held in enumerate(dealt):
        corpus_books.append(_book(b, [(title, text) for title, text, _ in held]))
        for position, (_, _, target) in enumerate(held):
            if target is None:
                continue
            section = f"/chapters/{position % 3}/sections/{position // 3}"
            queries.append(Query(TARGETS[target].paraphrase, "paraphrase", b, section))
            queries.append(Query(TARGETS[target].lexical, "lexical", b, section))
    queries.sort(key=lambda q: (q.kind, q.text))
    return Corpus(corpus_books, queries)


def recall_at_k(ranked: Sequence[Sequence[Hashable]], relevant: Sequence[set[Hashable]], k: int = 5) -> float:
    """Mean over the queries of the share of their relevant items found among their first ``k`` distinct
    ranked items (an item ranked twice, e.g. two hits in one section, counts once)."""
    if len(ranked) != len(relevant):
        raise ValueError("one ranking per query")
    if not ranked:
        return 0.0
    total = 0.0
    for items, wanted in zip(ranked, relevant, strict=True):
        top: list[Hashable] = []
        for item in items:
            if item not in top:
                top.append(item)
            if len(top) == k:
                break
        total += len(wanted.intersection(top)) / len(wanted) if wanted else 1.0
    return total / len(ranked)


def section_of(pointer: str) -> str:
    """The section a hit lies in (``/chapters/1/sections/0`` for ``/chapters/1/sections/0/paragraphs/0/text``)."""
    parts = pointer.split("/")
    return "/".join(parts[:5]) if len(parts) >= 5 and parts[3] == "sections" else pointer


def measure(search: Callable[[str, str], list[tuple[str, str]]], doc_ids: list[str], corpus: Corpus,
            modes: Sequence[str]) -> dict[tuple[str, str], tuple[float, list[str]]]:
    """recall@5 per (mode, kind of query) and the queries missed; ``search(query, mode)`` gives (doc_id, pointer)
    hits, best first."""
    results: dict[tuple[str, str], tuple[float, list[str]]] = {}
    for mode in modes:
        for kind in ("paraphrase", "lexical", "all"):
            chosen = [q for q in corpus.queries if kind in ("all", q.kind)]
            ranked = [[(doc_id, section_of(pointer)) for doc_id, pointer in search(q.text, mode)] for q in chosen]
            wanted: list[set[Hashable]] = [{(doc_ids[q.book], q.section)} for q in chosen]
            missed = [q.text for q, items, want in zip(chosen, ranked, wanted, strict=True)
                      if recall_at_k([items], [want]) == 0.0]
            results[mode, kind] = (recall_at_k(ranked, wanted), missed)
    return results


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - a script
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=8)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--approximate", action="store_true",
                        help="rank by the sign codes alone: of the codes read, only the best `limit` by Hamming "
                             "distance are scored exactly (the server scores max(400, 8 x limit))")
    args = parser.parse_args(argv)
    if args.approximate:
        from schemadoc.search import semantic

        semantic.RERANK_MIN, semantic.RERANK_FACTOR = 0, 1

    from common import BOOK_SCHEMA

    from schemadoc.schema import load_schema
    from schemadoc.search.hybrid import default_extensions
    from schemadoc.search.semantic import installed
    from schemadoc.service import DocumentService
    from schemadoc.storage.files import FileDocumentStore

    corpus = make_corpus(args.books, args.seed)
    modes = ["text", "semantic", "hybrid"] if installed() else ["text"]
    with tempfile.TemporaryDirectory() as directory:
        service = DocumentService(load_schema(Path(BOOK_SCHEMA)), FileDocumentStore(Path(directory)))
        service.search_extensions.extend(default_extensions())
        service.open()
        try:
            doc_ids = [service.create_document(book)[0] for book in corpus.books]

            def search(query: str, mode: str) -> list[tuple[str, str]]:
                page = service.search(query, limit=20, ranking=mode)
                return [(hit.doc_id, hit.pointer) for hit in page.hits]

            results = measure(search, doc_ids, corpus, modes)
        finally:
            service.close()
    sections = sum(len(ch["sections"]) for book in corpus.books for ch in book["chapters"])
    print(("by codes alone (only the best `limit` by code scored exactly): " if args.approximate
           else "") + f"search quality: {len(corpus.books)} books, {sections} sections ({len(TARGETS)} targets), "
          f"{len(corpus.queries)} queries (half paraphrased, half reusing the section's words); recall@5")
    print(f"{'mode':<10} {'paraphrase':>11} {'lexical':>8} {'all':>6}")
    for mode in modes:
        row = [results[mode, kind][0] for kind in ("paraphrase", "lexical", "all")]
        print(f"{mode:<10} {row[0]:>11.2f} {row[1]:>8.2f} {row[2]:>6.2f}")
    if not installed():
        print("semantic and hybrid: not measured, the semantic extra is not installed "
              "(pip install 'schemadoc[semantic]')")
    for mode in modes:
        missed = results[mode, "all"][1]
        print(f"missed by {mode} ({len(missed)}): " + "; ".join(missed))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
