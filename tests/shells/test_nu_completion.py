"""TAB in Nushell (issue 23 §3): nu's custom completers ask the daemon (`torch __complete --line`, the
answers bash, zsh and fish get) and offer, for a handle slot, the held handles of that slot's kind only,
each with what it holds; layer kinds, loss and metric names, autocast values, dtypes and devices too.
Driven through nu's own completion (`nu --ide-complete`) and by calling the completers as nu does."""
import json


def _objects(sh):
    m = sh("torch nn sequential -- 'linear 1 4' relu 'linear 4 1'")
    return {"m": m, "o": sh("torch optim adamw %s --lr 0.001" % m), "x": sh("torch randn 100 1"),
            "y": sh("torch randn 100 1")}


def _setup(objs):
    return "\n".join("let %s = %s" % (k, json.dumps(v)) for k, v in objs.items())


def test_tab_offers_for_a_handle_slot_the_handles_of_its_kind_only(nu, sh):
    objs = _objects(sh)
    setup = _setup(objs)
    models = nu.tab("torch forward ", setup)
    assert objs["m"] in models and all(h.startswith("nn://") for h in models)
    tensors = nu.tab("torch forward $m ", setup)
    assert objs["x"] in tensors and all(h.startswith("tensor://") for h in tensors)
    optims = nu.tab("torch train_step $m ", setup)
    assert objs["o"] in optims and all(h.startswith("optim://") for h in optims)
    assert all(h.startswith("tensor://") for h in nu.tab("torch add $x --other ", setup))


def test_each_handle_comes_with_what_it_holds(nu, sh):
    objs = _objects(sh)
    described = {}
    for words in ("torch train_step ", "torch train_step %(m)s " % objs, "torch train_step %(m)s %(o)s " % objs):
        described.update({r["value"]: r["description"] for r in nu.completer('nu-complete torch "%s"' % words)})
    assert described[objs["m"]] == "nn Sequential 3 layers"
    assert described[objs["o"]] == "optim AdamW lr=0.001"
    assert described[objs["x"]] == "tensor [100,1] float32"


def test_tab_completes_layer_kinds_losses_metrics_autocast_dtypes_and_devices(nu, sh):
    objs = _objects(sh)
    setup = _setup(objs)
    assert {"conv1d", "conv2d"} <= set(nu.tab("torch nn con"))
    assert "linear" in nu.tab("torch nn ")
    assert nu.tab("torch train_step $m $o $x $y --loss cross", setup) == ["cross_entropy"]
    assert "mse_loss" in nu.tab("torch train_step $m $o $x $y --loss ", setup)
    assert {"accuracy", "top5"} <= set(nu.tab("torch fit $m $o $l --metrics ", setup))
    assert set(nu.tab("torch train_step $m $o $x $y --autocast ", setup)) == {"bf16", "fp16"}
    assert {"float16", "float32", "float64"} <= set(nu.tab("torch zeros [2] --dtype float"))
    assert "cpu" in nu.tab("torch zeros [2] --device c")
    words = nu.completer("nu-complete torch words [torch nn conv2]")
    assert words and words[0]["value"] == "conv2d" and "convolution" in words[0]["description"]


def test_tab_after_a_path_word_offers_file_names(nu, sh):
    sh.run("mkdir -p nucmpl && touch nucmpl/weights.safetensors")
    assert "nucmpl/weights.safetensors" in nu.tab("torch load nucmpl/")


def test_tab_with_no_daemon_offers_nothing_and_starts_none(fresh_sh):
    import os
    from nutools import Nu
    s = fresh_sh(start=False)
    assert Nu(s).completer('nu-complete torch "torch forward "') == []
    assert not os.path.exists(s.socket)
