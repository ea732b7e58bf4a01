"""The system under test LoadGen drives: a queue, dynamic batching and K worker threads.

LoadGen's issue thread only puts samples on the queue (it never waits on a model). Each worker
takes the first queued sample, gathers more until it holds `batch` or `batch_timeout_ms` has passed
since the first (what is queued already is taken at once; 0 waits for nothing more), stacks them
into one array, calls its own compiled forward once and completes every sample of the batch the
moment the call returns. Every worker has its own forward, so a runtime that is not thread-safe
(a LiteRT interpreter, an OpenVINO infer request) is never shared.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

Call = Callable[[np.ndarray], object]
_STOP = object()
MAX_ERRORS_KEPT = 5


class BatchingSUT:
    """Queue-fed workers over `calls` (one forward per worker), answering samples from `library`.

    Args:
      calls: one forward per worker: uint8 [N, H, W, 3] -> outputs (kept only until the call returns).
      library: the query sample library, sample index -> uint8 [1, H, W, 3], loaded by LoadGen's callbacks.
      complete: complete(sample ids, their responses or None): LoadGen's QuerySamplesComplete (injected so the
        queue logic runs alone).
      respond: respond(a call's outputs, position in the batch, library index) -> that sample's response bytes
        (runtimes.responses.encoder); None: samples are completed without data.
    """

    def __init__(self, calls: Sequence[Call], library: dict, batch: int, batch_timeout_ms: float,
                 complete: Callable[[list[int], list[bytes] | None], None],
                 respond: Callable[[object, int, int], bytes] | None = None):
        self.library = library
        self.respond = respond
        self.batch = batch
        self.timeout_s = batch_timeout_ms / 1000
        self.complete = complete
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.batch_sizes: Counter = Counter()
        self.answered: Counter = Counter()  # sample id -> times completed (exactly once each, or a bug)
        self.errors: list[str] = []  # the first few, as text
        self.failed_calls = 0
        self.failed_samples = 0
        self._lock = threading.Lock()
        self._workers = [threading.Thread(target=self._work, args=(call,), daemon=True, name=f"sut-worker-{i}")
                         for i, call in enumerate(calls)]
        for worker in self._workers:
            worker.start()

    def issue(self, samples) -> None:
        """LoadGen's issue callback: (id, index) pairs onto the queue, nothing else."""
        for sample in samples:
            self.queue.put((sample.id, sample.index))

    def flush(self) -> None:
        """LoadGen's flush callback: nothing is held back, so nothing to flush."""

    @property
    def samples_answered(self) -> int:
        with self._lock:
            return sum(self.answered.values())

    def _gather(self, first) -> list:
        taken = [first]
        deadline = time.perf_counter() + self.timeout_s
        while len(taken) < self.batch:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                try:
                    item = self.queue.get(timeout=left)
                except queue.Empty:
                    break
            if item is _STOP:
                self.queue.put(_STOP)  # the other workers stop too, after this batch
                break
            taken.append(item)
        return taken

    def _work(self, call: Call) -> None:
        while True:
            first = self.queue.get()
            if first is _STOP:
                self.queue.put(_STOP)
                return
            taken = self._gather(first)
            images = [self.library[index] for _, index in taken]
            outputs = None
            try:
                outputs = call(images[0] if len(images) == 1 else np.concatenate(images))
            except Exception as exc:  # noqa: BLE001  LoadGen must still hear back, or it waits forever
                with self._lock:
                    self.failed_calls += 1
                    self.failed_samples += len(taken)
                    if len(self.errors) < MAX_ERRORS_KEPT:
                        self.errors.append(f"{type(exc).__name__}: {exc}")
            ids = [sample_id for sample_id, _ in taken]
            responses = None
            if self.respond is not None and outputs is not None:
                responses = [self.respond(outputs, position, index) for position, (_, index) in enumerate(taken)]
            self.complete(ids, responses)
            with self._lock:
                self.batch_sizes[len(taken)] += 1
                self.answered.update(ids)

    def stop(self) -> None:
        self.queue.put(_STOP)
        for worker in self._workers:
            worker.join()

    def stats(self) -> dict:
        """What the SUT did: calls by batch size, samples answered, any sample answered twice, the calls that
        raised (their count, the samples they held, the first few errors)."""
        with self._lock:
            return {"calls": sum(self.batch_sizes.values()),
                    "batch_sizes": {str(size): count for size, count in sorted(self.batch_sizes.items())},
                    "samples_answered": sum(self.answered.values()),
                    "answered_twice": sum(1 for count in self.answered.values() if count > 1),
                    "workers": len(self._workers), "failed_calls": self.failed_calls,
                    "failed_samples": self.failed_samples, "errors": list(self.errors)}


def with_sut_verdict(figures: dict, stats: dict) -> dict:
    """LoadGen's figures with the SUT's own failures ruled on: LoadGen counts a sample answered when the SUT
    completes it, result or not, so a test any of whose calls raised is INVALID, naming the first error
    and what LoadGen itself said."""
    if not stats["failed_calls"]:
        return figures
    reason = (f"the system under test failed {stats['failed_calls']} of {stats['calls']} calls "
              f"({stats['failed_samples']} samples answered without a result; LoadGen itself said "
              f"{figures.get('result') or 'nothing'}); first error: {stats['errors'][0]}")
    return {**figures, "result": "INVALID", "reasons": [reason, *figures.get("reasons", [])]}
