"""Train a YOLO11n with Ultralytics on a Pascal VOC set (the fruit set's layout), export it to ONNX (its raw head,
and the end-to-end head of `nms=True`), and print Ultralytics' own validation of each ONNX file on the test split:
the files and the figures `./run.sh infer --model FILE --data DIR` is checked against (docs/detection.md,
"Ultralytics YOLO and torchvision exports").

Ultralytics and torch are not the suite's dependencies: run this in a venv of its own, then the suite on its files.

    python3 -m venv build/yolo-venv && build/yolo-venv/bin/pip install ultralytics onnx onnxslim onnxruntime defusedxml pycocotools
    build/yolo-venv/bin/python examples/yolo_fruits.py --data ~/data/fruits --out results/yolo --epochs 30 --imgsz 320
    ./run.sh infer --model results/yolo/yolo11n.onnx --data ~/data/fruits --runtimes onnxruntime,openvino

No pretrained weights are fetched (`yolo11n.yaml`, trained from scratch), so it runs where no hub can be reached.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

SPLITS = {"train": ("train_zip/train", "train"), "test": ("test_zip/test", "test")}  # Kaggle's layout, else plain


def split_folder(data: Path, split: str) -> Path:
    for relative in SPLITS[split]:
        if (data / relative).is_dir():
            return data / relative
    raise SystemExit(f"{data}: no {split} split ({' or '.join(SPLITS[split])})")


def read_voc(xml: Path) -> list[tuple[str, float, float, float, float]]:
    """Each object of one VOC file: (name, xmin, ymin, xmax, ymax) in pixels."""
    from defusedxml import ElementTree

    objects = []
    for node in ElementTree.parse(xml).getroot().iter("object"):
        box = node.find("bndbox")
        objects.append((node.findtext("name").strip(), *(float(box.findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax"))))
    return objects


def to_ultralytics(data: Path, out: Path) -> tuple[Path, list[str]]:
    """The VOC set as Ultralytics' layout (images/ and labels/ per split, one `class cx cy w h` line an object,
    normalised by the decoded image's size) and its data.yaml; returns (the yaml, the class names)."""
    import cv2

    folders = {split: split_folder(data, split) for split in SPLITS}
    names = sorted({o[0] for xml in folders["train"].glob("*.xml") for o in read_voc(xml)})
    for split, folder in folders.items():
        (out / "images" / split).mkdir(parents=True, exist_ok=True)
        (out / "labels" / split).mkdir(parents=True, exist_ok=True)
        for image in sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")):
            xml = image.with_suffix(".xml")
            decoded = cv2.imread(str(image))
            if decoded is None or not xml.exists():
                continue
            height, width = decoded.shape[:2]
            lines = []
            for name, x0, y0, x1, y1 in read_voc(xml):
                x0, x1 = max(0.0, min(x0, width)), max(0.0, min(x1, width))
                y0, y1 = max(0.0, min(y0, height)), max(0.0, min(y1, height))
                if name in names and x1 > x0 and y1 > y0:
                    lines.append(f"{names.index(name)} {(x0 + x1) / 2 / width:.6f} {(y0 + y1) / 2 / height:.6f} "
                                 f"{(x1 - x0) / width:.6f} {(y1 - y0) / height:.6f}")
            shutil.copyfile(image, out / "images" / split / image.name)
            (out / "labels" / split / f"{image.stem}.txt").write_text("\n".join(lines) + "\n")
    yaml = out / "data.yaml"
    yaml.write_text(f"path: {out}\ntrain: images/train\nval: images/test\nnames:\n"
                    + "".join(f"  {i}: {name}\n" for i, name in enumerate(names)))
    return yaml, names


def parser(doc: str, out: str, epochs: int, batch: int) -> argparse.ArgumentParser:
    """The flags both examples take: --data, --out, --epochs, --batch."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="a Pascal VOC set: DIR/train_zip/train or DIR/train, ...")
    # absolute: Ultralytics reads a relative dataset path under its own datasets folder
    p.add_argument("--out", type=lambda text: Path(text).resolve(), required=True, help=out)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--batch", type=int, default=batch)
    return p


def main() -> None:
    p = parser(__doc__, "folder for the converted set, the run and the ONNX files", 30, 16)
    p.add_argument("--imgsz", type=int, default=320)
    p.add_argument("--hours", type=float, help="train for this long instead of --epochs (Ultralytics' `time`)")
    args = p.parse_args()

    from ultralytics import YOLO

    yaml, names = to_ultralytics(args.data, args.out / "dataset")
    model = YOLO("yolo11n.yaml")
    model.train(data=str(yaml), epochs=args.epochs, imgsz=args.imgsz, batch=args.batch, device="cpu", workers=2,
                pretrained=False, amp=False, plots=False, seed=0, deterministic=True, project=str(args.out),
                name="train", exist_ok=True, verbose=False, **({"time": args.hours} if args.hours else {}))
    best = args.out / "train" / "weights" / "best.pt"
    figures = {"classes": names, "imgsz": args.imgsz, "epochs": args.epochs, "hours": args.hours}
    for name, extra in (("yolo11n.onnx", {}), ("yolo11n-end2end.onnx", {"nms": True})):
        exported = Path(YOLO(str(best)).export(format="onnx", imgsz=args.imgsz, opset=17, **extra))
        target = args.out / name
        shutil.move(str(exported), target)
        metrics = YOLO(str(target), task="detect").val(data=str(yaml), split="val", imgsz=args.imgsz, batch=1,
                                                         conf=0.001, iou=0.7, device="cpu", plots=False)
        figures[name] = {"map_50_95": round(float(metrics.box.map), 4), "map_50": round(float(metrics.box.map50), 4),
                         "speed_ms": {k: round(v, 2) for k, v in metrics.speed.items()}}
        print(f"yolo val {name}: mAP50-95 {figures[name]['map_50_95']}, mAP50 {figures[name]['map_50']}")
    (args.out / "yolo_val.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(f"wrote {args.out / 'yolo_val.json'}")


if __name__ == "__main__":
    main()
