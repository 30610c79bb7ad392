"""`torch serve` spoken to by an existing KServe V2 client, Triton's tritonclient.http (a test dependency), over
--port with the daemon's token: health, readiness, metadata, and inference with JSON and with binary tensors,
the answers equal to PyTorch's. The client runs in a process of its own, as a user's program would (it brings
gevent, which this one does not need)."""
import json
import re
import subprocess
import sys

import torch

from test_serve import B, W, X, served

CLIENT = r'''
import json, sys
import numpy as np
import tritonclient.http as httpclient
url, token, x = sys.argv[1], sys.argv[2], np.array(json.loads(sys.argv[3]), dtype=np.float32)
client = httpclient.InferenceServerClient(url=url)
auth = {"Authorization": "Bearer " + token}
out = {"live": client.is_server_live(headers=auth), "ready": client.is_server_ready(headers=auth),
       "model_ready": client.is_model_ready("lin", headers=auth),
       "metadata": client.get_model_metadata("lin", headers=auth)}
for binary in (False, True):
    given = httpclient.InferInput("input__0", list(x.shape), "FP32")
    given.set_data_from_numpy(x, binary_data=binary)
    wanted = httpclient.InferRequestedOutput("output__0", binary_data=binary)
    result = client.infer("lin", [given], outputs=[wanted], headers=auth, request_id="r-%d" % binary)
    out["binary" if binary else "json"] = result.as_numpy("output__0").tolist()
out["ready_without_token"] = client.is_model_ready("lin")  # its 403 reads as not ready
try:
    client.get_model_metadata("lin")
    out["metadata_without_token"] = "answered"
except Exception as e:  # tritonclient raises the server's error
    out["metadata_without_token"] = str(e)
print(json.dumps(out))
'''


def test_tritonclient_reads_metadata_and_infers_with_json_and_binary_tensors(sh):
    job, _ = served(sh, "lin", "--port 0 --input_shape '[4]'")
    said = sh.run("torch job logs %s" % job).err
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", said).group(1))
    with open(re.search(r"\$\(cat ([^)\s]+)\)", said).group(1)) as f:
        token = f.read().strip()
    run = subprocess.run([sys.executable, "-c", CLIENT, "127.0.0.1:%d" % port, token, json.dumps(X.tolist())],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["live"], out["ready"], out["model_ready"]) == (True, True, True)
    assert out["metadata"]["inputs"] == [{"name": "input__0", "datatype": "FP32", "shape": [-1, 4]}]
    assert out["metadata"]["outputs"] == [{"name": "output__0", "datatype": "FP32", "shape": [-1, 3]}]
    want = torch.nn.functional.linear(X, W, B)
    for kind in ("json", "binary"):
        torch.testing.assert_close(torch.tensor(out[kind]), want)
    assert out["ready_without_token"] is False and "Authorization: Bearer" in out["metadata_without_token"]
    sh("torch job stop %s" % job)
