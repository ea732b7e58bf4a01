"""The two studies' published figures as result records: what ships as l40sbench/reference/*.json.

The tables below are copied verbatim from the seed articles (the L40S study's
Markdown tables; the LeaderGPU study's tab-separated ones), so what ships can
be read against them. `python -m l40sbench.reference.transcribe` writes the
JSON; a test checks that the JSON is what this module makes. Each record is built
through the result dataclasses a run writes (RunResult, SweepResult), plus the
two fields only a study's record has: `machine` and `source`.

Longer than 300 lines because the tables are the seed articles' own text; the
code is the last hundred lines.

How the LeaderGPU tables become rows (model, batch per GPU, GPUs):
- a batch-size table ("Taille de lot", "Batch size") holds one GPU count, the
  `@devices N` line before it (the study's heading "2x GTX 1080"; the P100's
  batch tables repeat its 2-GPU figures, so they are 2 GPUs);
- a GPU-count table uses the batch at which the same figure appears in that
  GPU count's batch table (the GTX 1080 and 1080 Ti tables ran VGG16 at 64, not
  the 32 their Options table says), else the Options batch, else the batch its
  heading names ("(batch size 32)");
- "-*" is out of memory (status "oom"); "-" and empty cells are not reported
  (no row): the 1080 Ti tables print "-" without the footnote's asterisk.
"""

from __future__ import annotations

import re
from pathlib import Path

from l40sbench.core.records import to_json
from l40sbench.core.results import DatasetInfo, InferenceResult, RunResult, SweepResult, TrainResult

LEADERGPU_SOURCE = "LeaderGPU, tf_cnn_benchmarks results (French article, 2017): shared/seeds/leadergpu_tf_cnn_benchmarks_fr.txt"
L40S_SOURCE = "L40S fine-tuning and inference study (Japanese article): shared/seeds/l40s_finetune_inference_ja.txt"

# The Options table every LeaderGPU machine prints: batch size per GPU.
OPTIONS_BATCH = {"inceptionv3": 64, "resnet50": 64, "resnet152": 32, "alexnet": 512, "vgg16": 32}
LABELS = {"InceptionV3": "inceptionv3", "ResNet-50": "resnet50", "ResNet-152": "resnet152", "VGG16": "vgg16",
          "Alexnet": "alexnet"}

# name: (machine as the report labels it, GPU, instance, OS, test date)
MACHINES = {
    "p100": ("LeaderGPU ltbv20, Tesla P100 (2017)", "NVIDIA Tesla P100", "ltbv20", "CentOS 7", "2017-06"),
    "gtx1080": ("LeaderGPU ltbv17/14/16, GTX 1080 (2017)", "NVIDIA GeForce GTX 1080", "ltbv17, 14, 16", "CentOS 7",
                "2017-06"),
    "gtx1080ti": ("LeaderGPU ltbv21/18/36, GTX 1080 Ti (2017)", "NVIDIA GeForce GTX 1080 Ti", "ltbv21, 18, 36",
                  "CentOS 7", "2017-06"),
    "aws_k80": ("AWS p2.8xlarge, Tesla K80 (2017)", "NVIDIA Tesla K80", "p2.8xlarge", "Ubuntu 16.04 LTS", "2017-05"),
    "google_k80": ("Google n1-standard-32-k80x8, Tesla K80 (2017)", "NVIDIA Tesla K80", "n1-standard-32-k80x8",
                   "Ubuntu 16.04 LTS", "2017-05"),
}

LEADERGPU_TABLES = {
    "p100": """\
GPUs	InceptionV3	ResNet-50	ResNet-152	VGG16	Alexnet
1	136.55	217.76	82.05	137.32	2807.64
2	259.14	410.88	150.41	240.61	5117.86
@devices 2
Taille de lot	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	1516.70	373.45	240.61	203.73	14524.23	714.25
64	2480.30	472.15	274.67	230.73	28599.07	877.76
128	3486.68	540.51	288.80	243.55	44943.19	990.89
256	4440.35	464.69	-*	-*	63311.75	1075.38
512	5117.86	-*	-*	-*	80078.57	1104.74
Taille de lot	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	574.13	233.99	116.45	361.06	214.15	150.41
64	1052.63	259.14	125.09	410.88	245.36	170.79
128	1509.01	269.51	-*	439.41	-*	-*
256	2041.60	-*	-*	-*	-*	-*
512	2323.77	-*	-*	-*	-*	-*
""",
    "gtx1080": """\
GPUs	InceptionV3	VGG16	ResNet-50	ResNet-152	Alexnet
2	187.93	173.2	259.39	109.02	3344.11
4	345.05	276.43	485.92	192.25	6221.67
8	685.59	428.57	949.72	369.02	9405.27
@devices 2
Taille de lot	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	823.87	223.73	150.50	129.67	14440.58	608.46
64	1517.33	299.24	173.20	149.62	25817.36	676.81
128	2198.87	291.47	-*	-*	40910.02	717.52
256	2878.43	-*	-*	-*	53821.73	730.47
512	3344.11	-*	-*	-*	66096.43	-*
Taille de lot	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	284.06	180.62	91.63	245.55	154.15	109.02
64	568.15	187.93	-*	259.39	-*	-*
128	911.17	-*	-*	-*	-*	-*
256	1211.36	-*	-*	-*	-*	-*
512	1424.58	-*	-*	-*	-*	-*
@devices 4
Taille de lot	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	1238.14	295.30	272.03	155.75	18389.01	1110.35
64	2375.18	354.55	276.43	169.51	37465.98	1235.77
128	3889.23	321.28	-*	-*	60612.34	1365.62
256	5056.10	-*	-*	-*	89908.56	1394.58
512	6221.67	-*	-*	-*	114433.39	-*
Taille de lot	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	450.85	328.23	166.82	447.25	276.27	192.25
64	885.37	345.05	-*	485.92	-*	-*
128	1576.74	-*	-*	-*	-*	-*
256	2126.47	-*	-*	-*	-*	-*
512	2447.81	-*	-*	-*	-*	-*
@devices 8
Taille de lot	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	1347.98	381.49	347.37	333.71	27248.65	2023.19
64	2406.83	620.29	428.57	-*	51105.12	2352.15
128	4255.75	-*	-*	-*	93211.00	2644.26
256	6318.54	-*	-*	-*	145559.65	2610.21
512	9405.27	-*	-*	-*	206469.92	-*
Taille de lot	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	555.36	632.23	323.09	857.12	518.57	369.02
64	1042.12	685.59	-*	949.72	-*	-*
128	1735.24	-*	-*	-*	-*	-*
256	2575.93	-*	-*	-*	-*	-*
512	3815.25	-*	-*	-*	-*	-*
""",
    "gtx1080ti": """\
GPUs	InceptionV3	VGG16	ResNet-50	ResNet-152	Alexnet
2	264.7	235.15	377.41	127.43	4596.37
4	493.14	401.68	706.95	270.35	8513.54
10	928.26	478.82	1418.60	513.37	-
@devices 2
Taille de lot	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	880.18	287.25	190.05	169.67	13411.38	807.60
64	1743.20	385.95	235.15	198.28	28360.89	954.35
128	2808.68	457.54	-	-	44453.02	1042.77
256	3777.74	-	-	-	67451.51	1070.28
512	4596.37	-	-	-	87898.53	-
Taille de lot	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	304.50	250.37	125.81	351.21	218.02	127.43
64	607.91	264.70	-	377.41	236.24	-
128	1162.21	-	-	381.62	-	-
256	1617.89	-	-	-	-	-
512	1992.50	-	-	-	-	-
@devices 4
Taille de lot	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	1264.01	378.39	331.08	208.39	19239.51	1487.66
64	2502.01	481.49	401.68	236.07	38818.10	1755.63
128	4539.97	541.39	-	-	71457.41	1943.93
256	6787.68	-	-	-	111721.23	1992.45
512	8513.54	-	-	-	152549.70	-*
Taille de lot	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	475.69	451.16	228.76	648.11	383.04	270.35
64	942.19	493.14	-	706.95	422.93	-
128	1706.03	-	-	722.16	-	-
256	2907.18	-	-	-	-	-
512	3478.50	-	-	-	-	-
@devices 10
Batch size	alexnet	vgg11	vgg16	vgg19	lenet	googlenet
32	865.89	368.50	309.07	289.88	18065.32	2200.48
64	1719.84	667.04	478.82	465.45	36486.24	3333.87
128	3344.45	868.66	-	-	70077.18	3771.19
256	6159.03	-	-	-	138600.70	4335.86
512		-	-	-	237511.15	-
Batch size	overfeat	inceptionv3	inceptionv4	resnet50	resnet101	resnet152
32	346.22	809.19	459.10	1116.42	760.83	513.37
64	676.99	928.26	-	1418.60	937.95	-
128	1322.01	-	-	1504.64	-	-
256	2387.97	-	-	-	-	-
512	-	-	-	-	-	-
""",
    "aws_k80": """\
GPUs	InceptionV3	ResNet-50	ResNet-152	Alexnet	VGG16
1	30.8	51.5	19.7	684	36.3
2	58.7	98.0	37.6	1244	69.4
4	117	195	74.9	2479	141
8	230	384	149	4853	260
GPUs	InceptionV3 (batch size 32)	ResNet-50 (batch size 32)
1	29.9	49.0
2	57.5	94.1
4	114	184
8	216	355
""",
    "google_k80": """\
GPUs	InceptionV3	ResNet-50	ResNet-152	Alexnet	VGG16
1	30.5	51.9	20.0	656	35.4
2	57.8	99.0	38.2	1209	64.8
4	116	195	75.8	2328	120
8	227	387	148	4640	234
GPUs	InceptionV3 (batch size 32)	ResNet-50 (batch size 32)
1	29.3	49.5
2	55.0	95.4
4	109	183
8	216	362
""",
}

L40S_TRAIN = """\
| ベースモデル | 学習時間 | 1epoch当たりの学習時間 |
|---|---|---|
| xception | 1m21.964s | 8.196s |
| inceptionv3 | 1m34.694s | 9.469s |
| vgg19 | 54.982s | 5.498s |
| faster_rcnn_inception_v2_coco | 14m40.170s | 4.401s |
| faster_rcnn_resnet50_coco | 35m27.830s | 10.639s |
| ssd_resnet_50_fpn_coco | 25m59.613s | 7.798s |
"""
L40S_INFERENCE = """\
| ベースモデル | 画像枚数 | 1枚当たりの平均推論時間 | 1秒当たりの平均処理画像数 |
|---|---|---|---|
| xception | 139 | 6.575 [ms] | 152.082 [fps] |
| inceptionv3 | 139 | 7.977 [ms] | 125.354 [fps] |
| vgg19 | 139 | 5.991 [ms] | 166.915 [fps] |
| faster_rcnn_inception_v2_coco | 59 | 12.622 [ms] | 79.227 [fps] |
| faster_rcnn_resnet50_coco | 59 | 14.142 [ms] | 70.710 [fps] |
| ssd_resnet_50_fpn_coco | 59 | 9.797 [ms] | 102.389 [fps] |
"""

L40S_DETECTORS = {"faster_rcnn_inception_v2_coco": "faster_rcnn_inception_v2",
                  "faster_rcnn_resnet50_coco": "faster_rcnn_resnet50", "ssd_resnet_50_fpn_coco": "ssd_resnet50_fpn"}
L40S_DATASETS = {
    "classify": ("Kaggle: Cats and Dogs image classification (images per class)", 557, 140,
                 {"train": {"cat": 279, "dog": 278}, "test": {"cat": 70, "dog": 70}}, 10),
    "detect": ("Kaggle: Fruit Images for Object Detection (objects per class)", 240, 60,
               {"train": {"apple": 156, "banana": 169, "orange": 140},
                "test": {"apple": 35, "banana": 40, "orange": 42}}, 200),
}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("\t")]


def _row(model: str, batch: int, devices: int, cell: str, table: str) -> dict | None:
    """One study cell as a synthetic row: a figure (ok), '-*' (oom), or None when not reported."""
    if cell in ("", "-"):
        return None
    ok = cell != "-*"
    return {
        "model": model, "mode": "train", "precision": "fp32", "xla": False, "optimizer": "sgd",
        "devices": devices, "workers": 1, "device_kind": "GPU", "per_device_batch": batch,
        "total_batch": batch * devices, "status": "ok" if ok else "oom",
        "images_per_second": float(cell) if ok else None, "error": None if ok else "the study's -*: out of GPU memory",
        "extra": {"study_table": table},
    }


def leadergpu_rows(text: str) -> list[dict]:
    """Every row one machine's tables give, batch tables first (see the module doc for the rules)."""
    blocks, devices, current = [], None, None
    for line in text.strip().splitlines():
        if line.startswith("@devices"):
            devices = int(line.split()[1])
        elif line.startswith(("GPUs", "Taille de lot", "Batch size")):
            current = (line.startswith("GPUs"), devices, _cells(line)[1:], [])
            blocks.append(current)
        else:
            current[3].append(_cells(line))
    rows: dict[tuple, dict] = {}
    for by_devices, at_devices, headers, body in sorted(blocks, key=lambda b: b[0]):  # batch tables first
        for cells in body:
            for header, cell in zip(headers, cells[1:] + [""] * (len(headers) - len(cells) + 1)):
                if by_devices:
                    label = re.sub(r" \(batch size (\d+)\)", "", header)
                    model, count = LABELS[label], int(cells[0])
                    named = re.search(r"\(batch size (\d+)\)", header)
                    same = [k[1] for k, r in rows.items() if k[0] == model and k[2] == count
                            and r["images_per_second"] is not None and cell not in ("", "-", "-*")
                            and r["images_per_second"] == float(cell)]
                    batch = int(named.group(1)) if named else (same[0] if same else OPTIONS_BATCH[model])
                    row = _row(model, batch, count, cell, "GPU count")
                else:
                    row = _row(header, int(cells[0]), at_devices, cell, f"{at_devices} GPUs, batch size")
                if row is None:
                    continue
                key = (row["model"], row["per_device_batch"], row["devices"])
                if key in rows and rows[key]["images_per_second"] != row["images_per_second"]:
                    raise ValueError(f"the study's tables disagree at {key}")
                rows.setdefault(key, row)
    return sorted(rows.values(), key=lambda r: (r["devices"], r["model"], r["per_device_batch"]))


def _gpu_env(gpu: str, count: int, os_name: str, date: str, **extra) -> dict:
    return {"devices": [{"type": "GPU", "name": f"GPU:{i}", "model": gpu} for i in range(count)],
            "os": os_name, "timestamp_utc": date, "python": None, "keras": None, "cpu": None, "cpu_count": None,
            "suite_commit": None, "calibration": None, **extra}


def leadergpu_records() -> list[dict]:
    records = []
    for name, text in LEADERGPU_TABLES.items():
        label, gpu, instance, os_name, date = MACHINES[name]
        rows = leadergpu_rows(text)
        devices = sorted({r["devices"] for r in rows})
        env = _gpu_env(gpu, max(devices), os_name, date, cuda="8.0", cudnn="5.1", instance=instance,
                       tensorflow="git b1e174e (tf_cnn_benchmarks 9165a70)")
        sweep = SweepResult(
            complete=True, env=env, rows=tuple(rows),
            config={"models": sorted({r["model"] for r in rows}),
                    "batch_sizes": sorted({r["per_device_batch"] for r in rows}), "devices": devices,
                    "settings": {"mode": "train", "precision": "fp32", "xla": False, "optimizer": "sgd",
                                 "warmup_steps": None, "steps": None, "memory_limit_gb": None}},
        )
        records.append({**sweep.to_dict(), "machine": label, "source": LEADERGPU_SOURCE})
    return records


def seconds(text: str) -> float:
    """'1m21.964s' -> 81.964, '54.982s' -> 54.982."""
    match = re.fullmatch(r"(?:(\d+)m)?([\d.]+)s", text.strip())
    return round(int(match.group(1) or 0) * 60 + float(match.group(2)), 3)


def _markdown_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.strip().splitlines()[2:]]


def l40s_records() -> list[dict]:
    inference = {cells[0]: cells for cells in _markdown_rows(L40S_INFERENCE)}
    records = []
    for name, total, per_epoch in _markdown_rows(L40S_TRAIN):
        task = "detect" if name in L40S_DETECTORS else "classify"
        source, train_images, test_images, classes, epochs = L40S_DATASETS[task]
        _, images, mean_ms, fps = inference[name]
        run = RunResult(
            task=task, base=L40S_DETECTORS.get(name, name), complete=True,
            config={"epochs": epochs, "batch_size": 16, "image_size": None, "precision": None},
            env=_gpu_env("NVIDIA L40S", 1, None, None, cuda=None, cudnn=None,
                         tensorflow="TensorFlow v1 (Keras API / Object Detection API)"),
            dataset=DatasetInfo(source, train_images, test_images, classes),
            # the study timed its whole training: its total is a wall time
            train=TrainResult(epochs=epochs, batch_size=16, epoch_seconds=(), total_seconds=seconds(total),
                              first_epoch_seconds=None, steady_epoch_seconds=None, wall_seconds=seconds(total)),
            weights="pretrained (ImageNet / COCO)",
            inference=InferenceResult(batch_size=1, warmup_excluded=1, images_timed=int(images),
                                      mean_ms=float(mean_ms.split()[0]), images_per_second=float(fps.split()[0]),
                                      p50_ms=None, p90_ms=None, p99_ms=None, min_ms=None, max_ms=None, std_ms=None),
            notes={"study_name": name, "study_time_per_epoch": per_epoch},
        )
        records.append({**run.to_dict(), "machine": "NVIDIA L40S (study)", "source": L40S_SOURCE})
    return records


def records() -> dict[str, list[dict]]:
    """File name -> the records it holds."""
    from l40sbench.reference import mlperf_v60

    return {"l40s.json": l40s_records(), "leadergpu_2017.json": leadergpu_records(),
            "mlperf_v60_yolo.json": mlperf_v60.records()}


def main() -> None:
    here = Path(__file__).parent
    for name, recs in records().items():
        (here / name).write_text(to_json(recs), encoding="utf-8")
        print(f"wrote {here / name}: {len(recs)} records")


if __name__ == "__main__":
    main()
