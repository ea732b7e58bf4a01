"""The paths a classify run's training batches come by (--input), and the parts harness.bound times apart.

- cached (the default): the images decoded once (data.folders' cache), held in memory; Keras batches the arrays;
- files: each epoch decodes and resizes the image files again, in tf.data, --input-threads at a time (default:
  every core the process may use);
- generator: a keras.utils.PyDataset decodes each batch in Python, --input-threads workers (default 1), as a
  TF1-era Keras fine-tune read its folders (ImageDataGenerator.flow_from_directory into fit_generator).

Every path decodes with the cache's own decoder (data.images), so the three give the model the same pixels.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from l40sbench.core.env import host_threads
from l40sbench.core.task import BoundParts
from l40sbench.data import folders
from l40sbench.data.images import read_image


@dataclasses.dataclass(frozen=True)
class SplitFiles:
    """A split's image files and labels, in the cache's order (its arrays' rows), without those it could not
    read."""

    paths: tuple[str, ...]
    labels: np.ndarray


def split_files(layout: folders.Layout, skipped: tuple[str, ...]) -> dict[str, SplitFiles]:
    unreadable = set(skipped)
    out = {}
    for split in folders.SPLITS:
        pairs = [(str(path), label) for label, name in enumerate(layout.classes)
                 for path in layout.files[split][name] if str(path) not in unreadable]
        out[split] = SplitFiles(tuple(p for p, _ in pairs), np.asarray([y for _, y in pairs], dtype=np.int32))
    return out


def threads_for(input_path: str, given: int | None) -> int | None:
    """The pipeline's threads: what --input-threads gave, else the path's own default (None: not the suite's
    to set, Keras batches cached arrays itself)."""
    if input_path == "cached":
        return None
    if given is not None:
        return given
    return host_threads() if input_path == "files" else 1


def files_dataset(files: SplitFiles, image_size: int, batch: int, threads: int, seed: int):
    """tf.data: the files shuffled each epoch, decoded and resized `threads` at a time, batched, prefetched."""
    import tensorflow as tf

    def decode(path):
        return read_image(path.decode(), image_size)

    def load(path, label):
        image = tf.numpy_function(decode, [path], tf.uint8, stateful=False)
        image.set_shape((image_size, image_size, 3))
        return image, label

    ds = tf.data.Dataset.from_tensor_slices((list(files.paths), files.labels))
    ds = ds.shuffle(len(files.paths), seed=seed, reshuffle_each_iteration=True)
    ds = ds.map(load, num_parallel_calls=threads).batch(batch).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    return ds.with_options(options)


def folder_batches(files: SplitFiles, image_size: int, batch: int, workers: int, seed: int):
    """A keras.utils.PyDataset: batch i decoded in Python on demand, the order reshuffled each epoch."""
    import keras

    class FolderBatches(keras.utils.PyDataset):
        def __init__(self):
            super().__init__(workers=workers, use_multiprocessing=False)
            self._rng = np.random.default_rng(seed)
            self._order = self._rng.permutation(len(files.paths))

        def __len__(self):
            return math.ceil(len(files.paths) / batch)

        def __getitem__(self, index):
            chosen = self._order[index * batch:(index + 1) * batch]
            return np.stack([read_image(files.paths[i], image_size) for i in chosen]), files.labels[chosen]

        def on_epoch_end(self):
            self._order = self._rng.permutation(len(files.paths))

    return FolderBatches()


def fit_input(input_path: str, images: folders.ImageSet, files: dict | None, image_size: int,
              batch: int, threads: int | None, seed: int) -> dict:
    """What model.fit takes for the path (x, y and fit's batching keywords)."""
    if input_path == "cached":
        return {"x": images.x["train"], "y": images.y["train"], "batch_size": batch, "shuffle": True}
    if input_path == "files":
        return {"x": files_dataset(files["train"], image_size, batch, threads, seed)}
    return {"x": folder_batches(files["train"], image_size, batch, threads, seed), "shuffle": False}


def adapter_epochs(given: dict, backend: str):
    """Epochs, one after another, of what fit's data adapter yields for `given`: Keras' own adapter, made once
    as fit makes it (a PyDataset's output signature read once), each epoch's iterator made as fit makes it."""
    from keras.src.trainers.data_adapters import get_data_adapter

    adapter = get_data_adapter(x=given["x"], y=given.get("y"), batch_size=given.get("batch_size"),
                               shuffle=given.get("shuffle", False))
    dataset = adapter.get_tf_dataset() if backend == "tensorflow" else None
    make = {"jax": adapter.get_jax_iterator, "torch": adapter.get_torch_dataloader}.get(backend,
                                                                                      adapter.get_numpy_iterator)
    while True:
        adapter.on_epoch_begin()
        yield ((int(batch[0].shape[0]), batch) for batch in (iter(dataset) if dataset is not None else make()))
        adapter.on_epoch_end()


def bound_parts(model, input_path: str, make_input, backend: str, batches_per_epoch: int,
                threads: int | None, several: str = "") -> BoundParts:
    """The run's pipeline afresh at N threads (make_input(threads) -> fit's input), and its compiled step:
    Keras' train_on_batch, the train function fit ran, on one batch converted to the device's tensors. With
    `several` (why: replicas that step together) the step is not timed alone: train_on_batch would hand each
    replica the whole batch."""
    import keras

    weights = [np.array(v) for v in model.weights]
    optimizer_state = [np.array(v) for v in model.optimizer.variables]

    def restore() -> None:
        for variable, value in zip(model.weights, weights):
            variable.assign(value)
        for variable, value in zip(model.optimizer.variables, optimizer_state):
            variable.assign(value)

    def place(batch):
        return tuple(keras.ops.convert_to_tensor(part) for part in batch[:2])

    def step(placed):
        return model.train_on_batch(*placed)  # returns the loss on the host: the step has finished

    return BoundParts(input_path=input_path,
                      batches=lambda n: adapter_epochs(make_input(threads if n is None else n), backend),
                      place=None if several else place, step=None if several else step,
                      batches_per_epoch=batches_per_epoch, threads=threads, restore=restore, step_why=several)
