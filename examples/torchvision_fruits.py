"""Train torchvision's Faster R-CNN (MobileNetV3-Large 320 FPN, from scratch) on a Pascal VOC set for a few epochs,
score it in torch with pycocotools on the test split, and export it to ONNX as torchvision exports a detector
(a (3, H, W) 0-1 image in; boxes, labels, scores out): the file and the figure `./run.sh infer --model FILE
--data DIR` is checked against (docs/detection.md, "Ultralytics YOLO and torchvision exports").

torch and torchvision are not the suite's dependencies: run this in a venv of its own (the one of
examples/yolo_fruits.py has both), then the suite on its file.

    build/yolo-venv/bin/python examples/torchvision_fruits.py --data ~/data/fruits --out results/frcnn --epochs 4
    ./run.sh infer --model results/frcnn/frcnn.onnx --data ~/data/fruits --runtimes onnxruntime,openvino

Its labels count from 1 in the data's class names' order (0 is the background), as the suite reads a torchvision
file's labels without --label-map.
"""

from __future__ import annotations

import json
from pathlib import Path

from yolo_fruits import parser, read_voc, split_folder


def load_split(data: Path, split: str, names: list[str] | None = None):
    """[(image tensor 0-1 (3, H, W), boxes (N, 4) x0 y0 x1 y1, labels from 1, file name)], and the class names."""
    import cv2
    import torch

    folder = split_folder(data, split)
    xmls = sorted(folder.glob("*.xml"))
    names = names or sorted({o[0] for xml in xmls for o in read_voc(xml)})
    items = []
    for xml in xmls:
        image = next((xml.with_suffix(s) for s in (".jpg", ".jpeg", ".png") if xml.with_suffix(s).exists()), None)
        decoded = None if image is None else cv2.imread(str(image))
        if decoded is None:
            continue
        height, width = decoded.shape[:2]
        boxes, labels = [], []
        for name, x0, y0, x1, y1 in read_voc(xml):
            x0, x1, y0, y1 = max(0, min(x0, width)), max(0, min(x1, width)), max(0, min(y0, height)), max(0, min(y1, height))
            if name in names and x1 > x0 and y1 > y0:
                boxes.append([x0, y0, x1, y1])
                labels.append(names.index(name) + 1)
        rgb = torch.from_numpy(cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)).permute(2, 0, 1).float() / 255
        items.append((rgb, torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4), torch.tensor(labels), image.name))
    return items, names


def coco_map(model, items, names) -> dict:
    """pycocotools' mAP@[.5:.95] and @.5 of the model's detections on `items`."""
    import torch
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    images, annotations, detections = [], [], []
    for index, (image, boxes, labels, name) in enumerate(items, start=1):
        images.append({"id": index, "file_name": name, "height": image.shape[1], "width": image.shape[2]})
        for (x0, y0, x1, y1), label in zip(boxes.tolist(), labels.tolist()):
            annotations.append({"id": len(annotations) + 1, "image_id": index, "category_id": label,
                                "bbox": [x0, y0, x1 - x0, y1 - y0], "area": (x1 - x0) * (y1 - y0), "iscrowd": 0})
        with torch.no_grad():
            out = model([image])[0]
        for (x0, y0, x1, y1), label, score in zip(out["boxes"].tolist(), out["labels"].tolist(), out["scores"].tolist()):
            detections.append({"image_id": index, "category_id": label, "bbox": [x0, y0, x1 - x0, y1 - y0],
                               "score": score})
    truth = COCO()
    truth.dataset = {"images": images, "annotations": annotations,
                     "categories": [{"id": i + 1, "name": n} for i, n in enumerate(names)]}
    truth.createIndex()
    if not detections:
        return {"map_50_95": 0.0, "map_50": 0.0}
    evaluation = COCOeval(truth, truth.loadRes(detections), "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    return {"map_50_95": round(float(evaluation.stats[0]), 4), "map_50": round(float(evaluation.stats[1]), 4)}


def main() -> None:
    args = parser(__doc__, "folder for the ONNX file and torch's figures", 4, 4).parse_args()

    import torch
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn

    torch.manual_seed(0)
    train, names = load_split(args.data, "train")
    test, _ = load_split(args.data, "test", names)
    # rpn_score_thresh 0 (the 320 model says 0.05): an image whose every proposal scores below it has none, and
    # the exported graph fails on it (a Reshape of 0 rows) where torch answers no detection
    model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=len(names) + 1,
                                                  rpn_score_thresh=0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train)).tolist()
        total = 0.0
        for start in range(0, len(order), args.batch):
            batch = [train[i] for i in order[start:start + args.batch]]
            losses = model([b[0] for b in batch], [{"boxes": b[1], "labels": b[2]} for b in batch])
            loss = sum(losses.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total / max(1, len(order) // args.batch):.3f}", flush=True)
    model.eval()
    figures = {"classes": names, "epochs": args.epochs, "torch": coco_map(model, test, names)}
    args.out.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(model, ([test[0][0]],), str(args.out / "frcnn.onnx"), opset_version=17, dynamo=False,
                      input_names=["images"], output_names=["boxes", "labels", "scores"],
                      dynamic_axes={"images": {1: "height", 2: "width"}, "boxes": {0: "n"}, "labels": {0: "n"},
                                    "scores": {0: "n"}})
    (args.out / "torch_map.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(f"torch's own mAP50-95 {figures['torch']['map_50_95']}, mAP50 {figures['torch']['map_50']}; "
          f"wrote {args.out / 'frcnn.onnx'}")


if __name__ == "__main__":
    main()
