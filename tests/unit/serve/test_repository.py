"""serve/repository.py: the models a daemon serves, by name (app.served). Pinned: a name is served once; a
served model that ends gives its name back but never a later model's under it; an unknown name says what is
served; two daemons' repositories (two Apps in one process) are apart."""
import pytest

from torchsh.errors import TorchshError
from torchsh.serve.repository import ModelRepository


class Served:
    def __init__(self, name):
        self.name = name


def test_a_name_is_served_once_and_an_unknown_one_says_what_is_served():
    repo, first = ModelRepository(), Served("mnist")
    repo.add(first)
    with pytest.raises(TorchshError) as taken:
        repo.add(Served("mnist"))
    assert taken.value.code == "name_in_use" and repo.get("mnist") is first
    repo.add(Served("lin"))
    with pytest.raises(TorchshError) as unknown:
        repo.get("cnn")
    assert unknown.value.code == "unknown_model" and "served: lin, mnist" in unknown.value.hint


def test_an_ended_model_gives_its_name_back_but_never_a_later_models():
    repo, old, new = ModelRepository(), Served("m"), Served("m")
    repo.add(old)
    repo.remove(old)
    repo.add(new)
    repo.remove(old)  # the old job's end, late: the new model stays served
    assert repo.get("m") is new and repo.names() == ["m"]


def test_two_repositories_are_apart():
    a, b = ModelRepository(), ModelRepository()
    a.add(Served("m"))
    assert a.names() == ["m"] and b.names() == []
    b.add(Served("m"))  # not name_in_use: another daemon's name
