"""call/policy.py: what a caller's policy (torch mcp --read_only, --allow, --deny) admits, and its header read."""
import json

import pytest

from torchsh.call import policy
from torchsh.errors import TorchshError
from torchsh.table.spec import ArgSpec, OpSpec, Overload


def _op(name, read_only=False, verb=True, args=()):
    return OpSpec(name=name, category="x", summary="", overloads=[Overload(args=tuple(args))], verb=verb,
                  read_only=read_only)


VALUE = _op("value", read_only=True, args=(ArgSpec("input", "tensor"), ArgSpec("out", "out_path", default=None,
                                                                              optional=True, keyword_only=True)))
SHAPE, ADD = _op("shape", read_only=True), _op("add", read_only=True, verb=False)
RANDN, SAVE, FIT = _op("randn", verb=False), _op("nn.save"), _op("fit")
LM_OPEN, LM_INFO = _op("lm.open"), _op("lm.info", read_only=True)


def _header(**fields):
    return policy.from_header(json.dumps(fields))


def test_no_header_is_no_policy_and_admits_everything():
    assert policy.from_header(None) is None
    for op in (VALUE, RANDN, SAVE, FIT):
        policy.check(None, op)


def test_an_empty_policy_admits_every_command():
    p = _header()
    assert all(policy.admits(p, op) for op in (VALUE, RANDN, SAVE, FIT, LM_OPEN))


def test_read_only_admits_the_read_only_commands_alone():
    p = _header(read_only=True)
    assert [op.name for op in (VALUE, SHAPE, ADD, RANDN, SAVE, FIT, LM_INFO) if policy.admits(p, op)] == [
        "value", "shape", "add", "lm.info"]


def test_allow_alone_admits_only_its_matches_dotted_or_as_typed():
    p = _header(allow=["lm.*", "nn save"])
    assert [op.name for op in (VALUE, RANDN, SAVE, FIT, LM_OPEN, LM_INFO) if policy.admits(p, op)] == [
        "nn.save", "lm.open", "lm.info"]


def test_allow_adds_to_read_only_and_deny_wins_over_both():
    p = _header(read_only=True, allow=["fit", "lm.*"], deny=["lm.info", "sha*"])
    admitted = [op.name for op in (VALUE, SHAPE, RANDN, SAVE, FIT, LM_OPEN, LM_INFO) if policy.admits(p, op)]
    assert admitted == ["value", "fit", "lm.open"]


def test_a_refusal_is_not_allowed_with_the_flag_to_change_in_its_hint():
    with pytest.raises(TorchshError) as e:
        policy.check(_header(read_only=True), SAVE)
    assert (e.value.code, e.value.op) == ("not_allowed", "nn save")
    assert "--read_only" in e.value.hint and "--allow 'nn.save'" in e.value.hint
    with pytest.raises(TorchshError) as e:
        policy.check(_header(deny=["nn.*"]), SAVE)
    assert "--deny 'nn.*'" in e.value.hint


def test_read_only_refuses_an_output_path_flag_of_a_read_only_verb_unless_allowed():
    p = _header(read_only=True)
    policy.check(p, VALUE, {"input": 1})
    with pytest.raises(TorchshError) as e:
        policy.check(p, VALUE, {"input": 1, "out": 2})
    assert e.value.code == "not_allowed" and "--out" in e.value.message
    policy.check(_header(read_only=True, allow=["value"]), VALUE, {"input": 1, "out": 2})


@pytest.mark.parametrize("text", ["{", "[]", '{"read_only": "yes"}', '{"allow": "fit"}', '{"deny": [1]}',
                                  '{"allow": [""]}', '{"writable": true}', json.dumps({"allow": ["x"] * 300})])
def test_a_malformed_header_is_bad_request(text):
    with pytest.raises(TorchshError) as e:
        policy.from_header(text)
    assert e.value.code == "bad_request" and "torchsh-policy" in e.value.message
