"""The walls a newcomer meets first, each answered with what to type: a layer's arguments as words of their
own, a list the shell split, a flag, dtype or device spelt as elsewhere, a bare word where a handle goes."""
import pytest


def _fails(sh, script, code):
    r = sh.run(script)
    assert r.code != 0 and r.err.rstrip().endswith("[%s]" % code), r.err
    assert r.err.count("\n") == 1, r.err  # one line
    return r


def test_sequential_layer_arguments_as_words_say_each_layer_is_one_word(sh):
    r = _fails(sh, "torch nn sequential linear 2 8 relu linear 8 1", "usage")
    assert "each layer is one word: 'linear 2 8' relu 'linear 8 1'" in r.err
    assert r.code == 2
    assert "33 parameters" in sh("torch nn sequential 'linear 2 8' relu 'linear 8 1' | torch nn info")


@pytest.mark.parametrize("words,joined", [("[2, 3]", "[2, 3]"), ("[[1, 2], [3, 4]]", "[[1, 2], [3, 4]]")])
def test_a_list_the_shell_split_says_quote_the_list(sh, words, joined):
    r = _fails(sh, "torch tensor %s" % words, "usage")
    assert "quote the list: '%s'" % joined in r.err
    assert sh("torch tensor '%s' | torch value" % joined) == joined.replace(" ", "")


def test_zeros_with_a_split_shape_says_quote_the_list(sh):
    assert "quote the list: '[2, 3]'" in _fails(sh, "torch zeros [2, 3]", "usage").err
    assert sh("torch zeros '[2, 3]' | torch shape") == "[2,3]"


def test_brackets_in_a_blocks_command_are_its_own(sh, tmp_path):
    assert sh("cd %s && touch x && torch scope -- [ -f x ] && echo ran" % tmp_path) == "ran"


def test_a_flag_spelt_close_to_the_ops_own_says_did_you_mean(sh):
    r = _fails(sh, "torch sum $(torch randn 2 3) --keepdims --dim 1", "unknown_flag")
    assert "did you mean --keepdim?" in r.err


def test_the_json_api_says_did_you_mean_too(sh):
    from support.apicall import post
    t = sh("torch randn 2 3")
    status, err = post(sh, "sum", {"args": [t], "kwargs": {"keepdims": True}})
    assert status == 400 and err["error"]["code"] == "unknown_flag" and "--keepdim?" in err["error"]["hint"]
    status, err = post(sh, "zeros", {"args": [2], "kwargs": {"dtype": "flaot32"}})
    assert err["error"]["code"] == "bad_argument" and "did you mean float32?" in err["error"]["hint"]


@pytest.mark.parametrize("flag,word,meant", [("dtype", "flaot32", "float32"), ("dtype", "fp16", "float16"),
                                             ("dtype", "torch.flaot64", "float64"), ("device", "gpu", "cuda"),
                                             ("device", "gpu:1", "cuda:1"), ("device", "cpus", "cpu")])
def test_a_dtype_or_device_spelt_as_elsewhere_says_did_you_mean(sh, flag, word, meant):
    r = _fails(sh, "torch zeros 2 3 --%s %s" % (flag, word), "bad_argument")
    assert "did you mean %s" % meant in r.err  # the closest first


def test_a_right_dtype_beside_a_wrong_device_names_only_the_device(sh):
    r = _fails(sh, "torch zeros 2 3 --dtype float32 --device gpu", "bad_argument")
    assert "did you mean cuda?" in r.err and "float32?" not in r.err


@pytest.mark.parametrize("script", ["torch forward m $(torch randn 1 2)", "torch add x 1", "torch free notahandle",
                                    "torch forward $(torch nn linear 2 2) x"])
def test_a_bare_word_where_a_handle_goes_is_bad_handle(sh, script):
    r = _fails(sh, script, "bad_handle")
    assert r.code == 3 and "is not a handle" in r.err


def test_bad_handle_suggests_the_shell_variable_it_may_have_meant(sh):
    assert "use $x if x is a shell variable" in _fails(sh, "torch add x 1", "bad_handle").err


def test_a_word_some_overload_reads_as_text_is_no_bad_handle(sh):
    assert sh("torch einsum ii $(torch eye 2) | torch value") == "2.0"
