"""Faster R-CNN's training FLOPs are counted from its training step, and that count agrees with one made by hand.

The hand count reads the traced training step's forward convolutions and matmuls (the ops outside the
gradient tape) and does the arithmetic itself, 2 x multiply-adds from each op's shapes, with no registry;
a training step is then about three forwards (the forward, then the gradients for activations and for
weights). TensorFlow's profiler, which the record's figure comes from, must agree with it, and both must
see the 64 regions training samples per image, not the 300 proposals serving runs its second stage on.
"""

import math

import pytest

pytestmark = pytest.mark.long  # Faster R-CNN's training step traced and profiled: a minute of CPU

SIZE = 128


def _shape(tensor) -> list[int]:
    return [int(d) for d in tensor.shape]


def hand_count_forward_gflops(graph) -> tuple[float, list]:
    """(GFLOP of the forward's convolutions and matmuls, the regions each box-head convolution or matmul sees)."""
    total, head_batches = 0.0, []
    for op in graph.get_operations():
        if "gradient_tape" in op.name or op.type not in ("Conv2D", "DepthwiseConv2dNative", "MatMul"):
            continue
        if op.type == "MatMul":
            a, b = (_shape(t) for t in op.inputs)
            m, k = (a[1], a[0]) if op.get_attr("transpose_a") else (a[0], a[1])
            n = b[0] if op.get_attr("transpose_b") else b[1]
            total += 2 * m * k * n
            if "detection_head" in op.name:
                head_batches.append(m)
            continue
        out, kernel = _shape(op.outputs[0]), _shape(op.inputs[1])  # NHWC; HWIO, or HW I multiplier (depthwise)
        total += 2 * math.prod(out) * kernel[0] * kernel[1] * (kernel[2] if op.type == "Conv2D" else 1)
        if "detection_head" in op.name:
            head_batches.append(out[0])
    return total / 1e9, head_batches


@pytest.fixture(scope="module")
def trained_step(tmp_path_factory):
    from l40sbench.backends.placement import Placement
    from l40sbench.core.devices import Device
    from l40sbench.detect.config import DetectConfig
    from l40sbench.detect.task import TASK

    config = TASK.check(DetectConfig(base="faster_rcnn_inception_v2", image_size=SIZE, limit=4, batch_size=2,
                                     epochs=1, output_dir=tmp_path_factory.mktemp("flops")))
    data = TASK.load(config, log=lambda *_: None)
    placement = Placement(None, (Device("CPU", "/job:localhost/replica:0/task:0/device:CPU:0", 0, "a CPU"),))
    return TASK.build(config, data, placement, placement.record(config.batch_size), lambda *_: None)


def test_faster_rcnn_training_flops_come_from_the_training_step_and_match_a_hand_count(trained_step):
    from l40sbench.backends.tf_flops import graph_gflops
    from l40sbench.detect import garden

    trainer = trained_step.state
    graph = garden.train_step_graph(trainer.task, trainer.experiment, trained_step.model, trainer.optimizer,
                                    trainer.metrics, trainer.placement)
    counted = graph_gflops(graph)  # what garden.train_step_gflops records (per replica: one here)
    forward, head_batches = hand_count_forward_gflops(graph)
    # The profiler's convolutions and matmuls, forward and backward; the first layer has no input gradient.
    assert 2.7 * forward <= counted <= 3.3 * forward, (counted, forward)
    # The box head runs on the regions training samples (64 per image), not on the 300 proposals.
    assert head_batches and set(head_batches) == {64}, head_batches
