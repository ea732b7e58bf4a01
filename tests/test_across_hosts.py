"""The across-hosts training loop, in process on one CPU replica: the long tier runs it across two workers."""

import numpy as np


class _Recorder:
    def __init__(self):
        self.calls = []

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("begin", epoch))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("end", epoch, logs))


def test_the_loop_steps_the_compiled_loss_and_optimizer_and_gives_fits_epoch_callbacks():
    import keras
    import tensorflow as tf

    from l40sbench.classify.across_hosts import fit_across_hosts

    rng = np.random.default_rng(0)
    x = rng.random((12, 4, 4, 3), dtype=np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Flatten(),
                                  keras.layers.Dense(2, activation="softmax")])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy")
    before = [w.copy() for w in model.get_weights()]
    recorder = _Recorder()
    fit_across_hosts(model, x, y, global_batch=4, epochs=3, strategy=strategy, seed=0, callback=recorder)
    assert [call[:2] for call in recorder.calls] == [("begin", 0), ("end", 0), ("begin", 1), ("end", 1),
                                                      ("begin", 2), ("end", 2)]
    losses = [call[2]["loss"] for call in recorder.calls if call[0] == "end"]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert all(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))
    # With a step size of 0 and the whole set as one global batch, the epoch's loss is the model's own loss.
    with strategy.scope():
        model.compile(optimizer=keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy")
    recorder = _Recorder()
    fit_across_hosts(model, x, y, global_batch=len(x), epochs=1, strategy=strategy, seed=0, callback=recorder)
    expected = float(np.mean(keras.losses.sparse_categorical_crossentropy(y, model.predict(x, verbose=0))))
    assert abs(recorder.calls[-1][2]["loss"] - expected) < 1e-5
