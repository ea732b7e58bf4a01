"""How far a runtime's outputs are from the reference (tf) outputs on the same images: pure NumPy."""

from __future__ import annotations

import numpy as np

MATCH_IOU = 0.5  # a runtime box stands for a tf box when it overlaps it this much (same class)


def classification(reference: np.ndarray, outputs: np.ndarray, labels: np.ndarray | None) -> dict:
    """Test accuracy (None without labels: a model whose outputs are not the data's classes), the share of
    images whose predicted class agrees with the reference (tf; None for one score per image, whose argmax
    is always the same, and for an output that is not one vector per image: a feature or segmentation map),
    and the largest output gap."""
    scores = outputs.ndim == 2 and outputs.shape[1] > 1
    predicted = np.argmax(outputs, axis=1) if scores else None
    return {
        "test_accuracy": None if labels is None or predicted is None else float(np.mean(predicted == labels)),
        "agreement_with_tf": float(np.mean(predicted == np.argmax(reference, axis=1))) if scores else None,
        "max_abs_diff_vs_tf": float(np.max(np.abs(outputs.astype(np.float64) - reference))),
    }


def iou_yxyx(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU of boxes [ymin, xmin, ymax, xmax]: a (n, 4) against b (m, 4) -> (n, m)."""
    top_left = np.maximum(a[:, None, :2], b[None, :, :2])
    bottom_right = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(bottom_right - top_left, 0, None), axis=2)
    area_a = np.prod(a[:, 2:] - a[:, :2], axis=1)
    area_b = np.prod(b[:, 2:] - b[:, :2], axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def kept(outputs: dict, index: int, score_threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(boxes, classes, scores) of one image's serving outputs, at or above the score threshold."""
    n = int(np.asarray(outputs["num_detections"][index]).reshape(-1)[0])
    boxes = np.asarray(outputs["detection_boxes"][index][:n], dtype=np.float64)
    classes = np.asarray(outputs["detection_classes"][index][:n]).astype(int)
    scores = np.asarray(outputs["detection_scores"][index][:n], dtype=np.float64)
    keep = scores >= score_threshold
    return boxes[keep], classes[keep], scores[keep]


def detection(reference: dict, outputs: dict, images: int, score_threshold: float) -> dict:
    """Greedy same-class matching of the runtime's boxes to tf's, the highest-scoring tf box first.

    Returns the mean IoU and mean |score difference| of the matched pairs, and the share of tf's
    detections that found a partner (None where tf detected nothing, so there is nothing to agree on).
    """
    ious, score_gaps, tf_count, runtime_count = [], [], 0, 0
    for i in range(images):
        ref_boxes, ref_classes, ref_scores = kept(reference, i, score_threshold)
        boxes, classes, scores = kept(outputs, i, score_threshold)
        tf_count += len(ref_boxes)
        runtime_count += len(boxes)
        if not len(ref_boxes) or not len(boxes):
            continue
        overlap = iou_yxyx(ref_boxes, boxes)
        overlap[ref_classes[:, None] != classes[None, :]] = 0.0
        free = np.ones(len(boxes), dtype=bool)
        for r in np.argsort(-ref_scores):
            candidates = np.where(free, overlap[r], -1.0)
            best = int(np.argmax(candidates))
            if candidates[best] >= MATCH_IOU:
                free[best] = False
                ious.append(candidates[best])
                score_gaps.append(abs(scores[best] - ref_scores[r]))
    return {
        "tf_detections": tf_count,
        "detections": runtime_count,
        "matched_share": len(ious) / tf_count if tf_count else None,
        "mean_iou_vs_tf": float(np.mean(ious)) if ious else None,
        "mean_score_diff_vs_tf": float(np.mean(score_gaps)) if score_gaps else None,
    }
