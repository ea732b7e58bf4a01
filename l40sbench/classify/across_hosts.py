"""A fine-tune across hosts under MultiWorkerMirroredStrategy.

Keras 3's `model.fit` and `evaluate` do not run under MultiWorkerMirroredStrategy (keras-team/keras#20585,
open since TensorFlow 2.16: a distributed batch reaches the step as a PerReplica value). So across hosts
each epoch steps the compiled model's own loss and optimizer under `strategy.run`, over the same images
in the same seeded order on every worker (tf.data shards them by element), and the epoch clock gets
the same callbacks as fit gives it.
"""

from __future__ import annotations

import numpy as np

TRAINING_LOOP = ("strategy.run of the model's loss and optimizer, one step per global batch "
                 "(Keras 3's fit does not run under MultiWorkerMirroredStrategy: keras-team/keras#20585)")


def fit_across_hosts(model, x: np.ndarray, y: np.ndarray, *, global_batch: int, epochs: int, strategy, seed: int,
                     callback) -> None:
    """Trains `model` (built and compiled in the strategy's scope) for `epochs` on (x, y)."""
    import keras
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=seed).batch(global_batch)
            .with_options(options))
    batches = strategy.experimental_distribute_dataset(data)
    optimizer = model.optimizer

    def replica_step(images, labels):
        with tf.GradientTape() as tape:
            probabilities = tf.cast(model(images, training=True), tf.float32)
            per_image = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
            loss = tf.nn.compute_average_loss(per_image, global_batch_size=global_batch)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def step(images, labels):
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step, args=(images, labels)),
                               axis=None)

    for epoch in range(epochs):
        callback.on_epoch_begin(epoch)
        losses = [float(step(images, labels)) for images, labels in batches]
        callback.on_epoch_end(epoch, {"loss": float(np.mean(losses))})
