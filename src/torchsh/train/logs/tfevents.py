"""TensorBoard event files written without TensorBoard: `torch fit --log DIR` keeps its scalars, run.json (as
text) and its hyperparameters (the HParams tab) in DIR/events.out.tfevents.<time>.<host>.<pid>.<n>.

An event file is a sequence of TFRecords (uint64 length, masked CRC32C of the length, the data, masked CRC32C
of the data), each an Event protobuf. The few messages needed are encoded here by hand (field numbers from
tensorflow/core/util/event.proto, framework/summary.proto, framework/tensor.proto and tensorboard's
plugins/hparams/{plugin_data,api}.proto), so the daemon needs neither protobuf nor tensorboard.
"""
import os
import socket
import struct
import time

FILE_PREFIX = "events.out.tfevents."  # rundir.run_files counts these as a run's files
_DT_FLOAT, _DT_STRING = 1, 7
_SESSION_START = 1  # SessionLog.SessionStatus.START: TensorBoard drops the steps it has seen from here on
_HPARAMS_TAG = "_hparams_/session_start_info"  # tensorboard.plugins.hparams.metadata.SESSION_START_INFO_TAG
_HPARAMS_END_TAG = "_hparams_/session_end_info"  # …metadata.SESSION_END_INFO_TAG
SESSION_STATUS = {"success": 1, "failure": 2}    # tensorboard.plugins.hparams.api_pb2.Status


def _crc32c_table():
    table = []
    for n in range(256):
        for _ in range(8):
            n = (n >> 1) ^ 0x82F63B78 if n & 1 else n >> 1  # the Castagnoli polynomial, reflected
        table.append(n)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    """TFRecord's masked CRC (a CRC of data holding CRCs is weak, so the stored one is rotated and offset)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    """One TFRecord: its framing around `data`."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


# -- protobuf's wire format: a key (field number << 3 | wire type), then the value --

def _varint(n):
    n &= 0xFFFFFFFFFFFFFFFF  # negative int64s take ten bytes, two's complement
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint_field(number, n):
    return _varint(number << 3) + _varint(n)


def double_field(number, x):
    return _varint(number << 3 | 1) + struct.pack("<d", x)


def float_field(number, x):
    try:
        return _varint(number << 3 | 5) + struct.pack("<f", x)
    except OverflowError:  # beyond float32's range: TensorBoard shows it as infinite, as a float32 cast would
        return _varint(number << 3 | 5) + struct.pack("<f", float("inf") if x > 0 else float("-inf"))


def bytes_field(number, data):
    """A length-delimited field: bytes, a string (UTF-8) or an embedded message."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _varint(number << 3 | 2) + _varint(len(data)) + data


# -- the messages --

def event(step, wall_time=None, file_version=None, summary=None, session_log=None):
    """Event{wall_time=1, step=2, file_version=3, summary=5, session_log=7}."""
    out = double_field(1, time.time() if wall_time is None else wall_time) + varint_field(2, step)
    if file_version is not None:
        out += bytes_field(3, file_version)
    if summary is not None:
        out += bytes_field(5, summary)
    if session_log is not None:
        out += bytes_field(7, session_log)
    return out


def scalars(values):
    """Summary{value=1…}, each Value{tag=1, simple_value=2}."""
    return b"".join(bytes_field(1, bytes_field(1, tag) + float_field(2, x)) for tag, x in values)


def _plugin_value(tag, plugin_name, content, tensor):
    """Summary.Value{tag=1, tensor=8, metadata=9{plugin_data=1{plugin_name=1, content=2}}}."""
    metadata = bytes_field(1, bytes_field(1, plugin_name) + (bytes_field(2, content) if content else b""))
    return bytes_field(1, bytes_field(1, tag) + bytes_field(8, tensor) + bytes_field(9, metadata))


def text(tag, string):
    """The text plugin's summary: a scalar DT_STRING tensor (TensorProto{dtype=1, tensor_shape=2, string_val=8}),
    rendered as Markdown."""
    tensor = varint_field(1, _DT_STRING) + bytes_field(2, b"") + bytes_field(8, string)
    return _plugin_value(tag, "text", b"", tensor)


def _value(x):
    """google.protobuf.Value{number_value=2, string_value=3, bool_value=4}."""
    if isinstance(x, bool):
        return varint_field(4, int(x))
    if isinstance(x, (int, float)):
        return double_field(2, float(x))
    return bytes_field(3, str(x))


_NULL_TENSOR = varint_field(1, _DT_FLOAT) + bytes_field(2, bytes_field(2, varint_field(1, 0)))  # float, shape [0]


def hparams(values, start_time):
    """The HParams plugin's session_start_info: HParamsPluginData{version=1 (0), session_start_info=3
    {hparams=1 (a map: entries {key=1, value=2}), start_time_secs=5}}; TensorBoard infers the experiment
    (the hyperparameters and the metrics, from the scalar tags) from the runs' session_start_infos."""
    entries = b"".join(bytes_field(1, bytes_field(1, name) + bytes_field(2, _value(x)))
                       for name, x in values.items())
    content = bytes_field(3, entries + double_field(5, start_time))
    return _plugin_value(_HPARAMS_TAG, "hparams", content, _NULL_TENSOR)


def session_end(status, end_time):
    """The HParams plugin's session_end_info: HParamsPluginData{session_end_info=4{status=1, end_time_secs=2}},
    the Status column of TensorBoard's HParams tab."""
    content = bytes_field(4, varint_field(1, SESSION_STATUS[status]) + double_field(2, end_time))
    return _plugin_value(_HPARAMS_END_TAG, "hparams", content, _NULL_TENSOR)


def session_start():
    """SessionLog{status=1 START}."""
    return varint_field(1, _SESSION_START)


class EventFile:
    """A new events file in `folder`, named as TensorBoard's writers name theirs; `n` keeps a folder's files
    in the order they were written (TensorBoard reads a folder's files in name order)."""

    def __init__(self, folder):
        n = sum(name.startswith(FILE_PREFIX) for name in os.listdir(folder))
        name = "%s%010d.%s.%d.%d" % (FILE_PREFIX, int(time.time()), socket.gethostname(), os.getpid(), n)
        self.path = os.path.join(folder, name)
        self._file = open(self.path, "xb")
        self.write(event(0, file_version="brain.Event:2"))

    def write(self, data):
        self._file.write(record(data))

    def flush(self):
        self._file.flush()

    def close(self):
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
