"""The one interface a model's queue has: the translator's ``TranslationQueue`` (``rendition.service.translation_engine``,
the step-level scheduler) and the encoder's ``Batcher`` (``rendition.service.batcher``, dynamic batching).

``rendition.service.inference`` submits a request's sentences through it; the pre-body gate
(``rendition.service.connections``) reads ``queued`` and ``retry_after``; the app starts and stops it.
The errors a ``submit`` raises are the same for both queues, and the facade maps them to HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, TypeVar

K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)  # the queue key
R = TypeVar("R")  # one sentence's result


class QueueFull(Exception):
    def __init__(self, model: str, retry_after: int):
        super().__init__(f"the {model} queue is full; retry in {retry_after} s")
        self.retry_after = retry_after


class BatchFailed(RuntimeError):
    """The model call a request's sentences ran in raised; carries the original error's message."""


class BatcherClosed(RuntimeError):
    """The queue is shutting down and takes no new work."""


class Queue(Protocol[K_contra, R]):
    """A model's queue (see the module docstring): sentences (token ids) with a key in, one result
    per sentence out (the translator: its n-best hypotheses; the encoder: its vector)."""

    name: str
    max_queue: int  # sentences waiting, at most (beyond: QueueFull)
    max_batch_size: int  # sentences run at once (the translator: per worker)

    @property
    def queued(self) -> int:
        """Sentences waiting, not yet running."""
        ...

    def retry_after(self) -> int:
        """Seconds until the queue ahead has drained (an estimate, >= 1)."""
        ...

    def start(self) -> None: ...

    async def stop(self) -> None:
        """Finish everything queued or running, then stop."""
        ...

    async def submit(
        self,
        payloads: Sequence[list[int]],
        costs: Sequence[int],
        key: K_contra,
        tokens: Sequence[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
        admitted: bool = False,
    ) -> list[R]:
        """Queue one request's sentences (token ids) and return their results in order
        (``admitted``: a later part of a request already accepted, a second decoding or a pivot's
        second leg, queued whatever the queue holds: nothing accepted is refused halfway);
        ``progress(i, steps)``, when given, is called on the event loop as sentence ``i`` is done,
        with the model passes it took (the translator: decoding steps; the encoder: 1).  Raises
        ``QueueFull`` at once when they do not fit, ``BatchFailed`` when the model raised,
        ``BatcherClosed`` while shutting down; cancelling the awaiting task drops the request's
        sentences that are still waiting (and, for the translator, its running ones at the next step)."""
        ...
