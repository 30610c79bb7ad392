"""Handle text: a malformed handle is bad_handle, a well-formed one of an earlier daemon stale_handle."""
import pytest

from torchsh.errors import TorchshError
from torchsh.registry import Registry, format_handle, parse_handle


def _code(registry, handle):
    with pytest.raises(TorchshError) as e:
        registry.get(handle)
    return e.value.code


def test_a_handle_shorter_than_epoch_plus_serial_is_malformed():
    assert parse_handle("tensor://nope") is None
    assert parse_handle("tensor://abc0001") is None
    assert parse_handle(format_handle("tensor", "abc", 1)) == ("tensor", "abc", "00001")
    assert parse_handle("tensor://abc1000000") == ("tensor", "abc", "1000000")  # past 36**5 objects


def test_malformed_is_bad_handle_and_an_earlier_epoch_is_stale():
    r = Registry()
    assert _code(r, "tensor://nope") == "bad_handle"
    other = "zzz" if r.epoch != "zzz" else "yyy"
    assert _code(r, format_handle("tensor", other, 1)) == "stale_handle"
    assert _code(r, format_handle("tensor", r.epoch, 99)) == "unknown_handle"


def test_serials_are_base36_padded_to_the_serial_width():
    from torchsh.registry.handles import SERIAL_LEN, base36

    def digit_by_digit(n):
        digits = ""
        while n:
            n, r = divmod(n, 36)
            digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        return digits.rjust(SERIAL_LEN, "0")
    for n in list(range(3000)) + [36 ** k + d for k in range(2, 12) for d in (-1, 0, 1)]:
        assert base36(n) == digit_by_digit(n) and int(base36(n), 36) == n
