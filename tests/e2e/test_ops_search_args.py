"""`torch ops --search WORD` also finds ops by their arguments' names and PyTorch's descriptions of
them (table/docargs.py), listed after the ops whose name or summary holds the word."""


def _names(sh, command):
    return [line.split()[0] for line in sh(command).splitlines()]


def test_search_finds_ops_by_their_arguments_descriptions_after_name_and_summary_hits(sh):
    names = _names(sh, "torch ops --search 'weight decay'")
    assert {"optim.adam", "optim.sgd", "optim.rmsprop"} <= set(names)  # "weight decay (L2 penalty)" args
    assert names[0] == "optim.adamw"  # its summary says weight decay: name and summary hits come first
    assert names[1:] == sorted(names[1:])


def test_search_finds_ops_by_an_argument_name(sh):
    names = _names(sh, "torch ops --search ignore_index")
    assert {"nn.functional.cross_entropy", "nn.functional.nll_loss"} <= set(names)


def test_search_by_name_still_lists_name_hits_alone_when_no_argument_mentions_the_word(sh):
    assert _names(sh, "torch ops --search erfcx") == ["special.erfcx"]
