"""The input flags classify and detect share: the pipeline's threads, whether the run times its input and step
apart (the record's `bound` block), and classify's input path."""

from __future__ import annotations

import argparse

THREADS_OVER_HOST = 4  # an input pipeline may oversubscribe the cores (I/O waits), not without bound


def thread_count(text: str) -> int:
    """--input-threads: 1 to THREADS_OVER_HOST x the cores this process may use."""
    from l40sbench.core.env import host_threads

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of threads") from None
    most = THREADS_OVER_HOST * host_threads()
    if not 1 <= value <= most:
        raise argparse.ArgumentTypeError(f"{value} threads: give 1 to {most} ({THREADS_OVER_HOST} x this host's "
                                         f"{host_threads()})")
    return value


def add(p, inputs: tuple[str, ...] = ()) -> None:
    """--input (where the task has more than one path), --input-threads and --no-bound."""
    if inputs:
        p.add_argument("--input", choices=inputs, default=inputs[0],
                       help="how training reads its images: cached (decoded once and held in memory; default), "
                            "files (decoded and resized from the files every epoch, tf.data, in parallel), "
                            "generator (a Python PyDataset decoding each epoch, as a TF1-era Keras fine-tune "
                            "read its folders); every table names the path a figure used")
    p.add_argument("--input-threads", type=thread_count, metavar="N",
                   help="threads of the training input pipeline (default: files and detect's parser, every core "
                        "this process may use; generator, 1; not with --input cached, which Keras batches from "
                        "memory); the bound block also times 1 and all")
    p.add_argument("--no-bound", dest="bound", action="store_false",
                   help="leave out the input-alone and step-alone passes after training (about one epoch's time "
                        "more) that say whether the host's input or the device's compute bounds the run (default: they run)")

