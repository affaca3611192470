"""The feed of the ``semantic`` extension (docs/search.md): when the vectors must be made for units an index
already holds (the extra just installed, the stored format changed, the index rebuilt), a thread embeds the stored
units in batches of :data:`FEED_UNITS` in document order behind an index that is open at once, each batch committed
with the position reached (``feed_after`` in ``semantic_state``), so a server stopped half way resumes there. Servers
sharing an index embed each batch once: the first to read a batch claims it. Until the feed is done, a query is
answered by full text (:meth:`SemanticFeed.note` says so).

:class:`SemanticFeed` is that half of :class:`~schemadoc.search.semantic.SemanticRanking`; the ranking supplies
the embedder and :meth:`~schemadoc.search.semantic.SemanticRanking._replace` (a document's vectors made again).
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from schemadoc.errors import SchemaDocError
from schemadoc.search.extension import IndexTransaction, RunInIndex
from schemadoc.search.units import TextUnit

if TYPE_CHECKING:
    from schemadoc.search.embeddings import Embedder

__all__ = ["FEED_KEY", "FEED_KEYS", "FEED_UNITS", "STATE", "SemanticFeed", "meaningful"]

log = logging.getLogger("schemadoc.search")

FEED_UNITS = 1_000
"""The stored units the background feed reads, embeds and writes at a time (its memory: one batch)."""
FEED_PAUSE_SECONDS = 0.01
"""The feed's pause between batches (the server's requests go first)."""
FEED_RETRY_SECONDS = 2.0
"""How long the feed waits after a failed batch (an outage of the database) before trying it again."""
FEED_CLAIM_SECONDS = 10.0
"""How long a server's claim on the feed's next batch holds off the others (servers sharing one index embed each
batch once; a batch takes well under a second to embed); a claim older than this, of a server stopped half way, is
taken over. A batch that takes longer is only embedded twice, never written twice."""
FEED_WAIT_SECONDS = 1.0
"""How long a server waits before looking again when another server holds the claim on the next batch."""
STATE = "semantic_state"
"""The extension's state: the cells' token, and the feed's position and claim while one runs."""
HEAD = "substr(text, 1, 2000)"
"""What the feed reads of a unit's text: what is embedded and digested of it (a batch's memory stays bounded)."""
FEED_KEY = "feed_after"
"""The state key of the background feed: every document whose id sorts at or before it is fed (absent: done)."""
_CLAIM = "feed_claim"
"""The state key of the claim on the feed's next batch: ``{owner} {deadline} {feed_after}``."""
_CLAIMED = "claimed"
"""What :meth:`SemanticRanking._feed_read` answers while another server's claim holds."""
FEED_KEYS = f"('{FEED_KEY}', 'feed_done', 'feed_total', '{_CLAIM}')"



def meaningful(text: str) -> bool:
    """Whether a unit is embedded: it has at least two words. A single word (an enum value such as ``draft``,
    a code, a one-word title) carries little meaning a static model can place; full text finds it."""
    return len(_WORD.findall(text, 0, 400)) >= 2


_WORD = re.compile(r"[^\W\d_]{2,}")


class SemanticFeed:
    """The feed's thread and state, and what a query says while it runs."""

    embedder: Embedder
    units_embedded: int

    def __init__(self) -> None:
        self._feeder: threading.Thread | None = None
        self._stop = threading.Event()
        self.fed = threading.Event()
        """Set once no feed is running in this process (none needed, or this process's finished)."""
        self.fed.set()
        self._owner = secrets.token_hex(8)
        """Who this extension is in a claim on the feed's next batch (one per server process)."""

    def _replace(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str], added: Sequence[TextUnit],
                 made: dict[bytes, Any] | None) -> None:
        raise NotImplementedError

    def on_opened(self, run: RunInIndex) -> None:
        """Start the feed's thread when a feed is under way and anything is left to feed (an empty store's feed
        ends here)."""
        if self._feeder is not None or not run(self._feed_left):
            return
        self._stop.clear()
        self.fed.clear()
        self._feeder = threading.Thread(target=self._feed, args=(run,), name="semantic-feed", daemon=True)
        self._feeder.start()

    def on_closing(self) -> None:
        """Stop the feed's thread after its batch (the next start resumes where it stopped)."""
        self._stop.set()
        if self._feeder is not None:
            self._feeder.join(timeout=30)
            self._feeder = None

    def note(self, tx: IndexTransaction) -> str | None:
        """What an answer ranked by this extension says: while the feed runs, that it ranked by full text."""
        state = dict(tx.execute(f"SELECT key, value FROM {STATE} WHERE key IN (?, 'feed_done', 'feed_total')",
                                [FEED_KEY]))
        if FEED_KEY not in state:
            return None
        done, total = int(state.get("feed_done", "0")), int(state.get("feed_total", "0"))
        progress = f" ({done:,} of {max(done, total):,} documents so far)" if total else ""
        return (f"Meaning is still being indexed{progress}: these hits are ranked by full text alone. Ask again "
                "once it is done for a ranking by meaning.")

    def feeding(self, tx: IndexTransaction) -> bool:
        """Whether a feed is under way (this server's or another's)."""
        return bool(tx.execute(f"SELECT 1 FROM {STATE} WHERE key = ?", [FEED_KEY]))

    def _left_to_feed(self, tx: IndexTransaction, doc_id: str) -> bool:
        """Whether a feed is under way that has not reached ``doc_id``. PostgreSQL: the state row is held (shared)
        to the end of the write, so that a batch of the feed (which holds it exclusively) either saw this write's
        units or is seen by it."""
        lock = " FOR SHARE" if tx.dialect == "postgres" else ""
        found = tx.execute(f"SELECT value < ? FROM {STATE} WHERE key = ?{lock}", [doc_id, FEED_KEY])
        return bool(found and found[0][0])

    def _feed_left(self, tx: IndexTransaction) -> bool:
        """Whether a feed is under way with units left to feed; one with none left ends here."""
        found = tx.execute(f"SELECT value FROM {STATE} WHERE key = ?", [FEED_KEY])
        if not found:
            return False
        if tx.execute("SELECT 1 FROM search_units WHERE doc_id > ? LIMIT 1", [found[0][0]]):
            return True
        tx.execute(f"DELETE FROM {STATE} WHERE key IN {FEED_KEYS}")
        return False

    def _feed(self, run: RunInIndex) -> None:
        """The feed's thread: batch after batch until done or stopped; a failed batch is tried again."""
        try:
            while not self._stop.is_set():
                try:
                    if not self._feed_batch(run):
                        return
                except SchemaDocError as error:
                    log.warning("semantic index: the feed waits: %s", error.message)
                    self._stop.wait(FEED_RETRY_SECONDS)
                except Exception:
                    log.exception("semantic index: a batch of the feed failed; it is tried again")
                    self._stop.wait(FEED_RETRY_SECONDS)
                self._stop.wait(FEED_PAUSE_SECONDS)
        finally:
            self.fed.set()

    def _feed_batch(self, run: RunInIndex) -> bool:
        """Read the next units, embed them outside any transaction, then write them (with the units of the same
        documents as they are by then); whether the feed goes on."""
        batch = run(self._feed_read)
        if batch is None:
            return False
        if isinstance(batch, str):  # _CLAIMED: another server embeds the next batch; look again in a while
            self._stop.wait(FEED_WAIT_SECONDS)
            return True
        after, until, texts = batch
        from schemadoc.search.embeddings import digest

        unique = list(dict.fromkeys(text for text in texts if meaningful(text)))
        made = dict(zip((digest(text) for text in unique), self.embedder.embed(unique), strict=True))
        self.units_embedded += sum(1 for text in texts if meaningful(text))
        run(lambda tx: self._feed_write(tx, after, until, made))
        return True

    def _feed_read(self, tx: IndexTransaction) -> tuple[str, str, list[str]] | str | None:
        """(where the feed is, the last document of this batch, the texts of its units); None when done;
        ``_CLAIMED`` when another server has claimed this batch (and its claim still holds). The batch is claimed
        for this server here, so that servers sharing the index embed each batch once."""
        lock = " FOR UPDATE" if tx.dialect == "postgres" else ""  # one server at a time reads and claims
        found = tx.execute(f"SELECT value FROM {STATE} WHERE key = ?{lock}", [FEED_KEY])
        if not found:
            return None
        after = found[0][0]
        now = time.time()
        claim = tx.execute(f"SELECT value FROM {STATE} WHERE key = ?", [_CLAIM])
        if claim:
            owner, deadline, claimed = claim[0][0].split(" ", 2)
            if owner != self._owner and claimed == after and float(deadline) > now:
                return _CLAIMED
        tx.execute(f"INSERT INTO {STATE} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                   "excluded.value", [_CLAIM, f"{self._owner} {now + FEED_CLAIM_SECONDS:.3f} {after}"])
        rows = tx.execute(f"SELECT doc_id, {HEAD} FROM search_units WHERE doc_id > ? ORDER BY doc_id, pointer "
                          f"LIMIT {FEED_UNITS + 1}", [after])
        if not rows:
            tx.execute(f"DELETE FROM {STATE} WHERE key IN {FEED_KEYS}")
            return None
        if not tx.execute(f"SELECT 1 FROM {STATE} WHERE key = 'feed_total'"):
            total = tx.execute("SELECT count(*) FROM search_docs")[0][0]
            tx.execute(f"INSERT INTO {STATE} (key, value) VALUES ('feed_total', ?), ('feed_done', '0')", [str(total)])
        if len(rows) > FEED_UNITS:  # the last document may be cut: it goes in the next batch
            whole = [row for row in rows if row[0] != rows[-1][0]]
            rows = whole or tx.execute(f"SELECT doc_id, {HEAD} FROM search_units WHERE doc_id = ?", [rows[-1][0]])
        return after, rows[-1][0], [row[1] for row in rows]

    def _feed_write(self, tx: IndexTransaction, after: str, until: str, made: dict[bytes, Any]) -> None:
        lock = " FOR UPDATE" if tx.dialect == "postgres" else ""
        found = tx.execute(f"SELECT value FROM {STATE} WHERE key = ?{lock}", [FEED_KEY])
        if not found or found[0][0] != after:
            return  # another server fed these
        units: dict[str, list[TextUnit]] = {}
        for doc_id, pointer, text in tx.execute(f"SELECT doc_id, pointer, {HEAD} FROM search_units WHERE doc_id > ? "
                                                "AND doc_id <= ? ORDER BY doc_id, pointer", [after, until]):
            units.setdefault(doc_id, []).append(TextUnit(pointer, text))
        for doc_id, added in units.items():
            self._replace(tx, doc_id, ("",), added, made)
        done = tx.execute(f"SELECT value FROM {STATE} WHERE key = 'feed_done'")
        tx.execute(f"UPDATE {STATE} SET value = ? WHERE key = ?", [until, FEED_KEY])
        tx.execute(f"UPDATE {STATE} SET value = ? WHERE key = 'feed_done'",
                   [str(int(done[0][0] if done else 0) + len(units))])
