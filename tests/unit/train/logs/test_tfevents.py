"""The hand-made event files read back with TensorBoard's own reader and protobuf classes: records whose CRCs
check, scalars as float32, run.json as the text plugin's string tensor, the HParams plugin's
session_start_info as its metadata module parses it, and the SessionLog START of a resumed run."""
import os

import pytest
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New, crc32c as tb_crc32c
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.util import tensor_util

from torchsh.train.logs import tfevents


def events(path):
    return [event_pb2.Event.FromString(data) for data in RawEventFileLoader(path).Load()]


def written(folder, *payloads):
    f = tfevents.EventFile(folder)
    for data in payloads:
        f.write(data)
    f.close()
    return f.path


def test_crc32c_is_castagnolis_as_tensorboard_computes_it():
    assert tfevents.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    for data in (b"", b"a", bytes(range(256)) * 3):
        assert tfevents.crc32c(data) == tb_crc32c(data)


def test_a_file_opens_with_its_version_and_is_named_as_tensorboards_writers_name_theirs(tmp_path):
    path = written(str(tmp_path))
    name = os.path.basename(path).split(".")
    assert name[:3] == ["events", "out", "tfevents"] and name[3].isdecimal() and name[-2] == str(os.getpid())
    assert [e.file_version for e in events(path)] == ["brain.Event:2"]


def test_a_second_file_in_a_folder_sorts_after_the_first(tmp_path):
    first, second = written(str(tmp_path)), written(str(tmp_path))
    assert sorted([second, first]) == [first, second]


def test_scalars_read_back_as_float32_at_their_step(tmp_path):
    path = written(str(tmp_path), tfevents.event(7, summary=tfevents.scalars([("step/loss", 0.1), ("step/lr", 3)])))
    e = events(path)[1]
    assert e.step == 7 and [(v.tag, v.simple_value) for v in e.summary.value] == [
        ("step/loss", pytest.approx(0.1, rel=1e-7)), ("step/lr", 3.0)]


def test_a_value_beyond_float32_is_infinite_and_nan_stays_nan(tmp_path):
    path = written(str(tmp_path), tfevents.event(1, summary=tfevents.scalars([("a", 1e300), ("b", -1e300),
                                                                              ("c", float("nan"))])))
    a, b, c = (v.simple_value for v in events(path)[1].summary.value)
    assert a == float("inf") and b == float("-inf") and c != c


def test_text_is_a_string_tensor_of_the_text_plugin(tmp_path):
    path = written(str(tmp_path), tfevents.event(0, summary=tfevents.text("run.json", "    {\"é\": 1}\n")))
    value = events(path)[1].summary.value[0]
    assert value.tag == "run.json" and value.metadata.plugin_data.plugin_name == "text"
    assert tensor_util.make_ndarray(value.tensor).item().decode() == "    {\"é\": 1}\n"


def test_hparams_parse_with_the_hparams_plugins_own_reader(tmp_path):
    values = {"optimizer": "SGD", "lr": 0.1, "batch_size": 16, "nesterov": False}
    path = written(str(tmp_path), tfevents.event(0, summary=tfevents.hparams(values, 1234.5)))
    value = events(path)[1].summary.value[0]
    assert value.tag == hparams_metadata.SESSION_START_INFO_TAG
    assert value.metadata.plugin_data.plugin_name == hparams_metadata.PLUGIN_NAME
    info = hparams_metadata.parse_session_start_info_plugin_data(value.metadata.plugin_data.content)
    assert info.start_time_secs == 1234.5
    assert {k: v.WhichOneof("kind") for k, v in info.hparams.items()} == {
        "optimizer": "string_value", "lr": "number_value", "batch_size": "number_value", "nesterov": "bool_value"}
    assert (info.hparams["optimizer"].string_value, info.hparams["lr"].number_value,
            info.hparams["batch_size"].number_value, info.hparams["nesterov"].bool_value) == ("SGD", 0.1, 16, False)
    assert tensor_util.make_ndarray(value.tensor).shape == (0,)


def test_a_session_start_is_a_sessionlog_start(tmp_path):
    path = written(str(tmp_path), tfevents.event(2**40, session_log=tfevents.session_start()))
    e = events(path)[1]
    assert e.step == 2**40 and e.session_log.status == event_pb2.SessionLog.START


def test_a_changed_byte_fails_tensorboards_crc_check(tmp_path):
    path = written(str(tmp_path), tfevents.event(1, summary=tfevents.scalars([("a", 1.0)])))
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 1  # in the last record's data
    with open(path, "wb") as f:
        f.write(data)
    reader = PyRecordReader_New(path)
    reader.GetNext()  # the first record is whole
    with pytest.raises(errors.DataLossError):
        reader.GetNext()
