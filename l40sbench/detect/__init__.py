"""Model Garden detection benchmark: VOC or TFDS data, Model Garden detectors, timed training, serving latency, COCO mAP."""
