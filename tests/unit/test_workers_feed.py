"""The change feed of several workers on the files store (``WorkersFeed``), in process: feeds wired to each other
as the supervisor wires them, messages delivered when the test says so.

The property (Hypothesis): whatever the interleaving of reservations, settlements (commits and failures),
ticks, message deliveries and reads on any worker, a reader that follows one worker's feed from cursor to
cursor never passes a commit it has not been shown (every commit is listed once, in cursor order, once every
message is delivered), and cursors are unique across workers. A lost message makes the receiver read its feed
again; a worker not heard from holds the others back.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.interfaces.workers import WorkersFeed
from schemadoc.service.models import Change


class Wiring:
    """``count`` feeds; what each sends waits in a queue per (sender, receiver) until delivered."""

    def __init__(self, count: int) -> None:
        self.queues: dict[tuple[int, int], deque[list[Any]]] = {}
        self.sequence = dict.fromkeys(range(1, count + 1), 0)
        self.feeds = {index: WorkersFeed(index, count, self._sender(index)) for index in range(1, count + 1)}
        for feed in self.feeds.values():
            assert not feed.loaded()
            feed.load([])
        self.committed: list[Change] = []

    def _sender(self, index: int) -> Any:
        def send(message: list[Any]) -> None:
            self.sequence[index] += 1
            for other in self.feeds:
                if other != index:
                    self.queues.setdefault((index, other), deque()).append([self.sequence[index], *message])
        return send

    def deliver(self, sender: int, receiver: int, *, lose: bool = False) -> bool:
        queue = self.queues.get((sender, receiver))
        if not queue:
            return False
        sequence, kind, *rest = queue.popleft()
        if lose:
            return True
        feed = self.feeds[receiver]
        if kind == "s":
            clock, lowest, change = rest
            feed.heard(sender, sequence, (clock, lowest), None if change is None else Change(*change))
        elif kind == "t":
            feed.heard(sender, sequence, (rest[0], rest[1]))
        return True

    def deliver_all(self) -> None:
        while any(self.queues.values()):
            for sender, receiver in list(self.queues):
                while self.deliver(sender, receiver):
                    pass

    def read_all(self, index: int, since: int) -> list[Change]:
        feed = self.feeds[index]
        if not feed.loaded():  # a gap made it read the journals again: here, every commit so far
            feed.load(list(self.committed))
        found = []
        while True:
            page = feed.read(since, 3)
            if not page.changes:
                return found
            found += page.changes
            since = page.next_cursor


WORKERS = 2
steps = st.lists(st.tuples(st.sampled_from(["reserve", "commit", "fail", "tick", "deliver", "read"]),
                           st.integers(1, WORKERS)), min_size=4, max_size=40)


@settings(max_examples=500, deadline=None)
@given(steps)
def test_a_reader_never_passes_a_commit_it_was_not_shown(plan: list[tuple[str, int]]) -> None:
    wiring = Wiring(WORKERS)
    for feed in wiring.feeds.values():
        feed.tick(always=True)
    wiring.deliver_all()
    in_flight: dict[int, list[int]] = {index: [] for index in wiring.feeds}
    cursor = 0
    shown: list[Change] = []
    reader = 1
    for action, worker in plan:
        feed = wiring.feeds[worker]
        if action == "reserve":
            in_flight[worker].append(feed.reserve())
        elif action in ("commit", "fail") and in_flight[worker]:
            reserved = in_flight[worker].pop(0)
            change = None
            if action == "commit":
                change = Change(reserved, f"doc{worker}", reserved, "update_node", "t", None)
                wiring.committed.append(change)
            feed.settle(reserved, change)
        elif action == "tick":
            feed.tick()
        elif action == "deliver":
            wiring.deliver(worker, worker % WORKERS + 1)
        elif action == "read":
            reader = worker
            page = wiring.feeds[reader].read(cursor, 5)
            shown += page.changes
            cursor = page.next_cursor
    for worker, reserved in in_flight.items():
        for one in reserved:
            wiring.feeds[worker].settle(one, None)
    for feed in wiring.feeds.values():
        feed.tick(always=True)
    wiring.deliver_all()
    shown += wiring.read_all(reader, cursor)
    cursors = [change.cursor for change in wiring.committed]
    assert len(cursors) == len(set(cursors))  # no two workers make the same cursor
    assert shown == sorted(wiring.committed, key=lambda change: change.cursor)


def test_a_worker_not_heard_from_holds_the_feed_back_and_a_lost_message_reads_it_again() -> None:
    wiring = Wiring(2)
    first, second = wiring.feeds[1], wiring.feeds[2]
    cursor = first.reserve()
    first.settle(cursor, Change(cursor, "a", 2, "update_node", "t", None))
    assert first.read(0, 10).changes == []  # worker 2 never spoke: it may still deliver anything
    second.tick()  # owes nothing: silent
    assert not wiring.deliver(2, 1)
    wiring.deliver(1, 2)  # worker 1's commit reaches worker 2, which owes a tick now
    second.tick()
    wiring.deliver(2, 1)
    assert [change.cursor for change in first.read(0, 10).changes] == [cursor]

    first.ended(2)  # worker 2 ended: held back until its replacement speaks
    assert first.read(0, 10).changes == []

    wiring.deliver_all()
    later = first.reserve()
    first.settle(later, Change(later, "b", 2, "update_node", "t", None))
    first.tick(always=True)
    wiring.deliver(1, 2, lose=True)  # the settlement is lost ...
    wiring.deliver(1, 2)  # ... the tick after it shows the gap
    assert not second.loaded()  # so worker 2 reads its feed again from the journals
