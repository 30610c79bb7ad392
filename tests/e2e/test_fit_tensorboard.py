"""`torch fit --log DIR` writes TensorBoard's event files, read here by TensorBoard's own EventAccumulator: every
number of metrics.jsonl as a scalar (step/NAME, epoch/NAME at the row's step), run.json as text, the HParams
tab's hyperparameters; a cut and resumed run reads as one curve; --log_format chooses the files."""
import json
import os
import struct

import torch
from tensorboard import context
from tensorboard.backend.event_processing import data_provider, event_accumulator, plugin_event_multiplexer
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import api_pb2, backend_context, metadata as hparams_metadata
from tensorboard.util import tensor_util

X = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(2))
BUILD = ("torch manual_seed 0; m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); "
         "o=$(torch optim sgd $m --lr 0.05 --momentum 0.9); "
         "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 8 --shuffle --seed 11); "
         "V=$(torch data loader $(torch data tensors {x} {y}) --batch_size 20 --seed 12); ")
FIT = "torch fit $m $o $L --loss cross_entropy --val $V --metrics accuracy --epochs 3 --log {log} {flags} >/dev/null"


def fit(sh, log, *steps):
    """One shell: the handles made once, then a fit per set of flags (a cut run, its resumptions), or a `cp`."""
    sh(BUILD.format(x=sh.put(X), y=sh.put(Y))
       + " && ".join(s if s.startswith("cp ") else FIT.format(log=log, flags=s) for s in steps))


def accumulated(folder):
    acc = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.SCALARS: 0,
                                                                    event_accumulator.TENSORS: 0})
    return acc.Reload()


def jsonl_rows(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def jsonl_as_scalars(rows):
    """metrics.jsonl as TensorBoard should hold it: {tag: [(step, value as float32)…]}."""
    want = {}
    for r in rows:
        for key, value in r.items():
            if key not in ("kind", "epoch", "step", "seconds"):
                want.setdefault("%s/%s" % (r["kind"], key), []).append((r["step"], float32(value)))
    return want


def scalars(acc):
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_every_number_of_metrics_jsonl_is_a_scalar_at_its_step(sh):
    log = sh.tmp("run")
    fit(sh, log, "")
    acc, rows = accumulated(log), jsonl_rows(log)
    assert scalars(acc) == jsonl_as_scalars(rows)
    assert {"step/loss", "step/lr", "epoch/loss", "epoch/val_loss", "epoch/accuracy", "epoch/val_accuracy",
            "epoch/lr"} == set(acc.Tags()["scalars"])
    assert [s for s, _ in scalars(acc)["step/loss"]] == list(range(1, 16))  # 5 batches an epoch, 3 epochs


def test_run_json_is_text_and_the_hyperparameters_fill_the_hparams_tab(sh):
    log = sh.tmp("run")
    fit(sh, log, "")
    acc = accumulated(log)
    text = tensor_util.make_ndarray(acc.Tensors("run.json")[0].tensor_proto).item().decode()
    with open(os.path.join(log, "run.json")) as f:
        held = json.load(f)
    assert held.pop("ended")["reason"] == "done"  # written as the run ended, after the text went to the events
    assert json.loads(text) == held  # indented four spaces: Markdown shows it as it is
    content = acc.SummaryMetadata(hparams_metadata.SESSION_START_INFO_TAG).plugin_data.content
    info = hparams_metadata.parse_session_start_info_plugin_data(content)
    hparams = {k: getattr(v, v.WhichOneof("kind")) for k, v in info.hparams.items()}
    assert {"optimizer": "SGD", "lr": 0.05, "momentum": 0.9, "batch_size": 8, "epochs": 3,
            "loss": "cross_entropy", "seed": 11, "monitor": "val_loss"}.items() <= hparams.items()
    assert hparams["model"].startswith("Sequential(")
    end = acc.SummaryMetadata(hparams_metadata.SESSION_END_INFO_TAG).plugin_data.content
    assert hparams_metadata.parse_session_end_info_plugin_data(end).status == api_pb2.STATUS_SUCCESS  # the Status column


def test_the_hparams_plugin_compares_runs_by_their_hyperparameters_and_scalars(sh):
    runs = sh.tmp("runs")
    fit(sh, runs + "/a", "")
    sh("cp -r %s/a %s/b" % (runs, runs))
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(runs)
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, runs)
    plugin = backend_context.Context(base_plugin.TBContext(data_provider=provider, logdir=runs, multiplexer=mux))
    ctx = context.RequestContext()
    experiment = plugin.experiment_from_metadata(ctx, "", True, plugin.hparams_metadata(ctx, ""),
                                                 plugin.hparams_from_data_provider(ctx, "", 100))
    assert {"optimizer", "lr", "momentum", "batch_size", "epochs", "loss", "seed", "model"} <= {
        h.name for h in experiment.hparam_infos}
    assert {"epoch/val_loss", "epoch/val_accuracy", "step/loss"} <= {m.name.tag for m in experiment.metric_infos}


def test_a_resumed_run_reads_as_one_curve_without_the_steps_it_replays(sh):
    log, kept = sh.tmp("run"), sh.tmp("step4.safetensors")
    # cut at step 4 (mid-epoch 1), on to step 7, then from the step-4 checkpoint again to the end: TensorBoard
    # must drop steps 5-7 of the earlier files (epoch 1's row among them) as metrics.jsonl drops its rows
    fit(sh, log, "--max_steps 4", "cp %s/last.safetensors %s" % (log, kept), "--resume auto --max_steps 7",
        "cp %s %s/last.safetensors" % (kept, log), "--resume auto")
    assert len([n for n in os.listdir(log) if n.startswith("events.out.tfevents.")]) == 3
    acc, rows = accumulated(log), jsonl_rows(log)
    assert scalars(acc) == jsonl_as_scalars(rows)
    assert [s for s, _ in scalars(acc)["step/loss"]] == list(range(1, 16))
    assert [s for s, _ in scalars(acc)["epoch/loss"]] == [5, 10, 15]


def test_log_format_jsonl_writes_no_events_and_a_bad_one_is_a_usage_error(sh):
    log = sh.tmp("run")
    fit(sh, log, "--log_format jsonl")
    assert sorted(os.listdir(log)) == ["best.safetensors", "last.safetensors", "metrics.jsonl", "run.json"]
    r = sh.run(BUILD.format(x=sh.put(X), y=sh.put(Y)) + FIT.format(log=sh.tmp("bad"), flags="--log_format tb,xml"))
    assert r.code == 2 and r.err.strip().splitlines()[-1] == (
        "torch: fit: --log_format xml: not a log format; valid: jsonl,csv,tb (any of them, comma-separated) "
        "[bad_argument]")
    r = sh.run(BUILD.format(x=sh.put(X), y=sh.put(Y)) + "torch fit $m $o $L --loss cross_entropy --log_format tb")
    assert r.code != 0 and "--log_format needs --log DIR" in r.err and "[missing_argument]" in r.err
