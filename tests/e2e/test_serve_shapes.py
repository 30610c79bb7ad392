"""`torch serve --input_shape`: the V2 model metadata gives the input's and outputs' shapes (the outputs' as
PyTorch computes them), and a request of other rows is refused before it queues (serve/shapes.py)."""
import torch

from support.apicall import UnixHTTPConnection
from test_serve import X, final_row, infer_doc, request, served

CNN = "sequential 'conv2d 1 4 3' relu 'max_pool2d 2' flatten 'linear 676 10'"


def test_metadata_gives_the_declared_input_and_the_outputs_pytorch_computes(sh):
    m = sh("torch nn %s" % CNN)
    job = sh("torch serve %s --name cnn --input_shape '[1,28,28]' --detach" % m)
    conn = UnixHTTPConnection(sh.socket)
    meta = request(conn, "GET", "/v2/models/cnn")[1]
    oracle = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                 torch.nn.Linear(676, 10))(torch.zeros(1, 1, 28, 28))
    assert meta["inputs"] == [{"name": "input__0", "datatype": "FP32", "shape": [-1, 1, 28, 28]}]
    assert meta["outputs"] == [{"name": "output__0", "datatype": "FP32", "shape": [-1, *oracle.shape[1:]]}]
    sh("torch job stop %s" % job)


def test_a_request_of_other_rows_is_refused_before_it_queues_and_right_rows_are_answered(sh):
    job, _ = served(sh, "declared", "--input_shape '[4]'")
    conn = UnixHTTPConnection(sh.socket)
    wrong = torch.randn(2, 5)
    status, out, _ = request(conn, "POST", "/v2/models/declared/infer", infer_doc(wrong))
    assert status == 400 and out["code"] == "bad_argument" and "rows [4]" in out["error"] and "[5]" in out["error"]
    status, out, _ = request(conn, "POST", "/v2/models/declared/infer", infer_doc(X))
    assert status == 200 and out["outputs"][0]["shape"] == [5, 3]
    row = final_row(sh, job)
    assert (row["requests"], row["batches"]) == (2, 1)  # the refused one never reached a batch


def test_a_shape_the_model_does_not_take_or_too_big_to_hold_is_refused_at_start(sh):
    m = sh("torch nn linear 4 3")
    r = sh.run("torch serve %s --name misfit --input_shape '[5]' --detach" % m)
    assert r.code == 2 and "[bad_argument]" in r.err and "--input_shape [5] does not fit" in r.err, r.err
    assert "mat1 and mat2" in r.err  # PyTorch's own words for the sizes that disagree
    r = sh.run("torch serve %s --name misfit --input_shape '[0]' --detach" % m)
    assert r.code == 2 and "at least 1" in r.err
    r = sh.run("torch serve %s --name misfit --input_shape '[100000,100000]' --detach" % m)  # a 40 GB sample
    assert r.code == 4 and "[out_of_memory]" in r.err, r.err  # the budget's refusal, before it allocates
    job = sh("torch serve %s --name misfit --detach" % m)  # the name was never taken; bare: shapes unknown
    meta = request(UnixHTTPConnection(sh.socket), "GET", "/v2/models/misfit")[1]
    assert meta["inputs"][0]["shape"] == [-1] and meta["outputs"][0]["shape"] == [-1]
    sh("torch job stop %s" % job)
