"""The studies' figures as shipped records: checked against the seed text, cell by cell where quoted."""

import json
from pathlib import Path

import pytest

from l40sbench import cost, reference
from l40sbench.reference import transcribe
from l40sbench.report import inputs
from l40sbench.synthetic.models import MODELS

HERE = Path(transcribe.__file__).parent


def _machine(name):
    """One LeaderGPU machine's record, by its name in transcribe.MACHINES."""
    (record,) = [r for r in reference.load("leadergpu-2017") if r["machine"] == transcribe.MACHINES[name][0]]
    return record


def test_shipped_json_is_what_the_transcription_makes():
    for name, records in transcribe.records().items():
        assert json.loads((HERE / name).read_text()) == json.loads(json.dumps(records)), name


def test_every_reference_loads_by_name_and_is_a_result_record():
    for name in reference.REFERENCES:
        loaded = inputs.load(name)
        assert loaded and all(item.origin == name for item in loaded)
        for item in loaded:
            assert item.record["schema"].startswith("l40sbench.result/")
            assert item.record["source"] and item.record["machine"] and item.record["env"]["devices"]


GROUP_1 = ("alexnet", "vgg11", "vgg16", "vgg19", "lenet", "googlenet")
GROUP_2 = ("overfeat", "inceptionv3", "inceptionv4", "resnet50", "resnet101", "resnet152")


# Lines quoted from shared/seeds/leadergpu_tf_cnn_benchmarks_fr.txt. A batch-size line's first cell is the
# batch (at `devices` GPUs); a GPU-count line's first cell is the GPU count (at each column's `batches`).
@pytest.mark.parametrize("machine, quoted, models, devices, batches", [
    ("p100", "1\t136.55\t217.76\t82.05\t137.32\t2807.64",  # GPUs table at the Options batches
     ("inceptionv3", "resnet50", "resnet152", "vgg16", "alexnet"), None, (64, 64, 32, 32, 512)),
    ("p100", "256\t4440.35\t464.69\t-*\t-*\t63311.75\t1075.38", GROUP_1, 2, None),  # its batch tables: 2 GPUs
    ("gtx1080", "8\t685.59\t428.57\t949.72\t369.02\t9405.27",  # VGG16 ran at 64 here
     ("inceptionv3", "vgg16", "resnet50", "resnet152", "alexnet"), None, (64, 64, 64, 32, 512)),
    ("gtx1080", "32\t450.85\t328.23\t166.82\t447.25\t276.27\t192.25", GROUP_2, 4, None),  # 4x GTX 1080
    ("gtx1080", "64\t2406.83\t620.29\t428.57\t-*\t51105.12\t2352.15", GROUP_1, 8, None),
    ("gtx1080ti", "512\t\t-\t-\t-\t237511.15\t-", GROUP_1, 10, None),  # blank and '-': no row
    ("gtx1080ti", "512\t8513.54\t-\t-\t-\t152549.70\t-*", GROUP_1, 4, None),  # its one '-*'
    ("aws_k80", "8\t230\t384\t149\t4853\t260",
     ("inceptionv3", "resnet50", "resnet152", "alexnet", "vgg16"), None, (64, 64, 32, 512, 32)),
    ("google_k80", "8\t216\t362", ("inceptionv3", "resnet50"), None, (32, 32)),  # "(batch size 32)" columns
])
def test_leadergpu_rows_match_the_seed(machine, quoted, models, devices, batches):
    index = {(r["model"], r["per_device_batch"], r["devices"]): r for r in _machine(machine)["rows"]}
    first, *cells = quoted.split("\t")
    assert len(cells) == len(models)
    for i, (model, cell) in enumerate(zip(models, cells)):
        key = (model, int(first), devices) if devices else (model, batches[i], int(first))
        if cell in ("", "-"):
            assert key not in index, key
        elif cell == "-*":
            assert index[key]["status"] == "oom" and index[key]["images_per_second"] is None, key
        else:
            assert index[key]["status"] == "ok" and index[key]["images_per_second"] == float(cell), key


def test_leadergpu_rows_are_rows_of_the_registry():
    for record in reference.load("leadergpu-2017"):
        for row in record["rows"]:
            assert row["model"] in MODELS.names()
            assert row["total_batch"] == row["per_device_batch"] * row["devices"]


def test_leadergpu_machines_and_their_environments():
    records = reference.load("leadergpu-2017")
    assert [len(r["rows"]) for r in records] == [65, 180, 104, 28, 28]  # 1080 Ti: '-' cells are not rows
    devices = {r["machine"]: r["config"]["devices"] for r in records}
    assert sorted(devices.values()) == [[1, 2], [1, 2, 4, 8], [1, 2, 4, 8], [2, 4, 8], [2, 4, 10]]
    for record in records:
        env = record["env"]
        assert (env["cuda"], env["cudnn"]) == ("8.0", "5.1") and "b1e174e" in env["tensorflow"]
    oom = sum(r["status"] == "oom" for record in records for r in record["rows"])
    assert oom == 18 + 83 + 1  # every '-*' of the seed: P100, 2/4/8x GTX 1080, 4x 1080 Ti


def test_cost_reference_rates_are_the_shipped_8_gpu_figures():
    offers = {"Google cloud": "google_k80", "AWS": "aws_k80", "LeaderGPU": "gtx1080"}
    names = {"Inception V3": ("inceptionv3", 64), "ResNet-50": ("resnet50", 64), "ResNet-152": ("resnet152", 32)}
    for model, offer, rate, _, _ in cost.LEADERGPU_2017:
        rows = {(x["model"], x["per_device_batch"], x["devices"]): x for x in _machine(offers[offer])["rows"]}
        assert rows[(*names[model], 8)]["images_per_second"] == rate, (model, offer)


def test_l40s_records_match_the_seed():
    records = {r["base"]: r for r in reference.load("l40s")}
    assert sorted(records) == sorted(["xception", "inceptionv3", "vgg19", "faster_rcnn_inception_v2",
                                      "faster_rcnn_resnet50", "ssd_resnet50_fpn"])
    # | xception | 1m21.964s | 8.196s |   and   | xception | 139 | 6.575 [ms] | 152.082 [fps] |
    x = records["xception"]
    assert x["task"] == "classify" and x["train"]["total_seconds"] == 81.964 and x["train"]["epochs"] == 10
    assert x["inference"]["mean_ms"] == 6.575 and x["inference"]["images_per_second"] == 152.082
    assert x["inference"]["images_timed"] == 139 and x["dataset"]["classes"]["train"] == {"cat": 279, "dog": 278}
    # | ssd_resnet_50_fpn_coco | 25m59.613s | 7.798s |   and   | ... | 59 | 9.797 [ms] | 102.389 [fps] |
    s = records["ssd_resnet50_fpn"]
    assert s["task"] == "detect" and s["train"]["total_seconds"] == 1559.613 and s["train"]["epochs"] == 200
    assert s["inference"]["mean_ms"] == 9.797 and s["inference"]["images_timed"] == 59
    assert s["dataset"]["classes"]["test"] == {"apple": 35, "banana": 40, "orange": 42}
    # The study's per-epoch column is the total over the epochs, to the printed millisecond.
    for record in records.values():
        per_epoch = record["train"]["total_seconds"] / record["train"]["epochs"]
        assert f"{per_epoch:.3f}s" == record["notes"]["study_time_per_epoch"], record["base"]
    assert transcribe.seconds("35m27.830s") == 2127.83 and transcribe.seconds("54.982s") == 54.982
