"""`torch serve` reads the model's card as `predict` does (docs/models.md#the-models-card): raw rows in are
standardized with the training statistics, and a classifier's answer carries `prediction`, each row's class by
name. The issue's case: an iris model trained on standardized rows says setosa for 5.1,3.5,1.4,0.2 through
predict, and used to answer versicolor's logits through serve."""
import csv
import json
import struct

import torch
from sklearn import datasets

from support.apicall import UnixHTTPConnection
from test_serve import binary_request, infer_doc, request

NAMES = ["setosa", "versicolor", "virginica"]
ROW = torch.tensor([[5.1, 3.5, 1.4, 0.2]])


def _iris(sh):
    d = datasets.load_iris()
    path = sh.tmp("iris.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sl", "sw", "pl", "pw", "species"])
        for row, t in zip(torch.tensor(d.data, dtype=torch.float32).tolist(), d.target):
            w.writerow([repr(v) for v in row] + [NAMES[t]])
    return path, torch.tensor(d.data, dtype=torch.float32)


def _fitted(sh):
    path, x = _iris(sh)
    m = sh("torch manual_seed 0 >/dev/null; m=$(torch nn sequential 'linear 4 16' relu 'linear 16 3'); "
           "d=$(torch data transform $(torch data open %s --target species) --standardize); "
           "torch fit $m $(torch optim adam $m --lr 0.05) $(torch data loader $d --batch_size 16 --shuffle --seed 0) "
           "--loss cross_entropy --epochs 30 >/dev/null; echo $m" % path)
    return m, path, x


def test_serve_standardizes_raw_rows_and_names_the_class_as_predict_does(sh):
    m, path, x = _fitted(sh)
    job = sh("torch serve %s --name iris --detach" % m)
    try:
        want = sh.fetch(sh("torch predict %s %s" % (m, sh.put(x))))  # predict M TENSOR: the card applied
        rows = json.loads(sh("torch predict --json %s $(torch data open %s --target species)" % (m, path)))
        conn = UnixHTTPConnection(sh.socket)
        status, body, _ = request(conn, "POST", "/v2/models/iris/infer", infer_doc(ROW))
        assert status == 200, body
        outputs = {o["name"]: o for o in body["outputs"]}
        assert outputs["prediction"] == {"name": "prediction", "datatype": "BYTES", "shape": [1], "data": ["setosa"]}
        status, body, _ = request(conn, "POST", "/v2/models/iris/infer", infer_doc(x))
        outputs = {o["name"]: o for o in body["outputs"]}
        assert torch.equal(torch.tensor(outputs["output__0"]["data"]).reshape(150, 3), want)
        assert outputs["prediction"]["data"] == [r["prediction"] for r in rows]
        status, meta, _ = request(conn, "GET", "/v2/models/iris")
        assert meta["inputs"][0]["shape"] == [-1, 4]  # one row's shape, from the card
        assert {"name": "prediction", "datatype": "BYTES", "shape": [-1]} in meta["outputs"]
        status, header, tail = binary_request(conn, "/v2/models/iris/infer", ROW)
        raw = {o["name"]: o for o in header["outputs"]}
        size = raw["output__0"]["parameters"]["binary_data_size"]
        assert tail[size:] == struct.pack("<I", 6) + b"setosa"  # BYTES: its length, then the text
    finally:
        sh("torch job stop %s >/dev/null" % job)


def test_a_model_without_a_card_is_served_as_it_is(sh):
    m = sh("torch nn linear 4 3")
    job = sh("torch serve %s --name bare --detach" % m)
    try:
        status, body, _ = request(UnixHTTPConnection(sh.socket), "POST", "/v2/models/bare/infer", infer_doc(ROW))
        assert status == 200 and [o["name"] for o in body["outputs"]] == ["output__0"]
        assert torch.equal(torch.tensor(body["outputs"][0]["data"]).reshape(1, 3), sh.fetch(sh("torch forward %s %s"
                                                                                            % (m, sh.put(ROW)))))
    finally:
        sh("torch job stop %s >/dev/null" % job)
