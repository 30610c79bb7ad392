"""`torch profile -- CMD`: the trace names the ops CMD's commands ran, the folded stacks are well formed, the
top-N table comes in text, tsv and json after CMD's own output, CMD's status is the exit status, one profile
at a time (busy), a killed client's recording is dropped, --steps and --max_s, the JSON API, and zsh.

Run twice by scripts/test.sh: through the `torch` client and through the bash function (the exec reply's
closing output is printed by both)."""
import json
import os
import re

from support.apicall import post
from test_fastpath_zsh import _zsh

MATMUL = "bash -c 'torch matmul $(torch randn 16 16) $(torch randn 16 16) >/dev/null; echo cmd-done'"
COLUMNS = ["name", "calls", "self_cpu_us", "total_cpu_us", "self_cpu_memory_bytes"]
FOLDED_LINE = re.compile(r"^[^;\n]+(;[^;\n]+)* \d+$")


def _profiled(sh, flags=""):
    folder = sh.tmp("prof")
    out = sh("torch profile --out %s %s -- %s" % (folder, flags, MATMUL))
    return folder, out


def test_the_trace_is_json_that_names_the_ops_cmd_ran(sh):
    folder, _ = _profiled(sh)
    with open(os.path.join(folder, "trace.json")) as f:
        trace = json.load(f)
    names = {e.get("name") for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    assert {"aten::mm", "aten::randn"} <= names
    assert not [n for n in os.listdir(folder) if n.startswith(".torchsh-")]  # the temp files renamed into place


def test_the_folded_stacks_are_frame_lines_with_counts_and_reach_the_ops(sh):
    folder, _ = _profiled(sh)
    with open(os.path.join(folder, "stacks.folded")) as f:
        lines = f.read().splitlines()
    assert lines and all(FOLDED_LINE.match(line) for line in lines), [x for x in lines if not FOLDED_LINE.match(x)][:3]
    assert any(line.rsplit(" ", 1)[0].endswith(";aten::mm") for line in lines)


def test_the_table_follows_cmds_output_with_its_columns(sh):
    _, out = _profiled(sh, "--top 3")
    lines = out.splitlines()
    assert lines[0] == "cmd-done"
    assert lines[1].split() == COLUMNS and len(lines) == 5
    rows = [line.rsplit(None, 4) for line in lines[2:]]  # which ops lead is the machine's timing: the order is pinned
    assert all(len(r) == 5 for r in rows)
    assert [float(r[2]) for r in rows] == sorted((float(r[2]) for r in rows), reverse=True)  # self_cpu, most first


def test_the_table_in_tsv_has_a_header_and_tab_separated_rows(sh):
    out = sh("torch profile --format tsv --sort calls -- %s" % MATMUL).splitlines()
    assert out[0] == "cmd-done" and out[1].split("\t") == COLUMNS
    rows = [line.split("\t") for line in out[2:]]
    assert rows and all(len(r) == 5 for r in rows) and "aten::mm" in [r[0] for r in rows]
    calls = [int(r[1]) for r in rows]
    assert calls == sorted(calls, reverse=True)


def test_the_table_in_json_is_a_list_of_records(sh):
    out = sh("torch profile --format json --top 50 -- %s" % MATMUL).splitlines()
    rows = json.loads(out[1])
    assert rows and all(list(r) == COLUMNS for r in rows)
    mm = next(r for r in rows if r["name"] == "aten::mm")
    assert mm["calls"] >= 1 and mm["total_cpu_us"] >= mm["self_cpu_us"] > 0


def test_a_failing_cmd_still_writes_the_files_and_prints_and_its_status_is_the_exit_status(sh):
    folder = sh.tmp("prof")
    r = sh.run("torch profile --out %s --format tsv -- bash -c 'torch sum $(torch randn 4) >/dev/null; exit 3'"
               % folder)
    assert r.code == 3
    assert "aten::sum" in [line.split("\t")[0] for line in r.out.splitlines()]
    assert sorted(os.listdir(folder)) == ["stacks.folded", "trace.json"]


def test_a_second_profile_while_one_records_is_refused_busy(sh):
    r = sh.run("torch profile -- torch profile -- true")
    assert r.code == 5 and "[busy]" in r.err
    assert sh.run("torch profile -- true").code == 0  # the outer one ended with its command


def test_a_killed_profile_client_drops_its_recording(sh):
    folder = sh.tmp("killed")
    os.makedirs(folder)
    r = sh.run("torch profile -- sh -c 'echo $$ > cmd.pid; exec sleep 60' >/dev/null 2>&1 & p=$!; "
               "while [ ! -s cmd.pid ]; do sleep 0.1; done; kill -9 $p; wait $p; kill $(cat cmd.pid); "
               "for i in 1 2 3 4 5 6 7 8 9 10; do torch profile -- true 2>/dev/null && exit 0; sleep 0.5; done; exit 1",
               cwd=folder)
    assert r.code == 0, r.err


def test_steps_records_that_many_steps_of_a_fit(sh):
    folder = sh.tmp("prof")
    sh("m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
       "L=$(torch data loader $(torch data tensors $(torch randn 64 2) $(torch randn 64 1)) --batch_size 8); "
       "torch profile --steps 3 --out %s -- torch fit $m $o $L --loss mse_loss --epochs 2 >/dev/null" % folder)
    with open(os.path.join(folder, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    assert sum(e.get("name") == "aten::mse_loss" for e in events) == 3  # 16 steps ran; 3 were recorded


def test_steps_without_a_job_records_nothing_and_says_so(sh):
    r = sh.run("torch profile --steps 2 --format json -- bash -c 'torch randn 3 >/dev/null'")
    assert (r.code, r.out) == (0, "[]\n") and "nothing was recorded: CMD ran no job step" in r.err


def test_max_s_stops_recording_with_a_note(sh):
    r = sh.run("torch profile --max_s 0.5 --format tsv -- bash -c 'sleep 2; torch randn 3 >/dev/null'")
    assert r.code == 0 and "recording stopped after --max_s 0.5 s" in r.err
    assert "aten::randn" not in r.out


def test_the_json_api_answers_the_block_as_exec_and_finish_as_rows(sh):
    status, body = post(sh, "profile", {"kwargs": {"command": ["x"]}})
    assert status == 409 and body["error"]["code"] == "needs_client"
    status, body = post(sh, "profile", {"kwargs": {"command": ["x"], "top": 5}, "exec": True})
    assert status == 200 and body["exec"]["then"]["op"] == "profile.finish", body
    post(sh, "matmul", {"args": [[[1.0, 2.0]], [[3.0], [4.0]]]})
    status, rows = post(sh, "profile.finish", {"args": body["exec"]["then"]["args"]})
    assert status == 200 and "aten::mm" in [r["name"] for r in rows["result"]], rows


def test_the_zsh_function_prints_the_table_after_cmds_output(sh):
    out, err, code = _zsh(sh, "torch profile --format tsv -- sh -c 'echo cmd-done; exit 4'")
    assert code == 4, err
    assert out.decode().splitlines()[:2] == ["cmd-done", "\t".join(COLUMNS)]


def test_bad_flags_are_refused_before_cmd_runs_or_a_folder_is_made(sh):
    folder = sh.tmp("never")
    for flags, code in (("--sort nope", "bad_argument"), ("--format xml", "bad_argument"), ("--top 0", "bad_argument"),
                        ("--max_s 0", "bad_argument"), ("--steps 0", "bad_argument")):
        r = sh.run("torch profile --out %s %s -- echo ran" % (folder, flags))
        assert (r.code, r.out) == (2, "") and "[%s]" % code in r.err, (flags, r)
    assert not os.path.exists(folder)
    r = sh.run("torch profile --top 3 --")
    assert r.code == 2 and "needs a command after --" in r.err


def test_a_folder_that_holds_a_profile_is_refused_before_cmd_runs_and_overwrite_replaces_it(sh):
    folder, _ = _profiled(sh)
    with open(os.path.join(folder, "trace.json")) as f:
        first = f.read()
    marker = sh.tmp("cmd-ran")
    r = sh.run("torch profile --out %s -- touch %s" % (folder, marker))
    assert r.code == 3 and "[run_exists]" in r.err and "--overwrite" in r.err, r
    assert not os.path.exists(marker)
    with open(os.path.join(folder, "trace.json")) as f:
        assert f.read() == first  # the earlier profile is untouched
    sh("torch profile --out %s --overwrite -- bash -c 'torch sum $(torch ones 3) >/dev/null; touch %s'"
       % (folder, marker))
    assert os.path.exists(marker)
    with open(os.path.join(folder, "trace.json")) as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"] if e.get("cat") == "cpu_op"}
    assert "aten::sum" in names and "aten::mm" not in names


def test_overwrite_without_out_is_refused(sh):
    r = sh.run("torch profile --overwrite -- echo ran")
    assert (r.code, r.out) == (2, "") and "[bad_argument]" in r.err


def test_the_json_api_refuses_a_folder_that_holds_a_profile(sh):
    folder, _ = _profiled(sh)
    status, body = post(sh, "profile", {"kwargs": {"command": ["x"], "out": folder}, "exec": True})
    assert status == 409 and body["error"]["code"] == "run_exists", body


def test_a_recording_stops_once_the_daemon_grew_by_a_quarter_of_its_budgets_room(fresh_sh):
    s = fresh_sh(start=False)
    s.env.update(TORCHSH_MAX_MEMORY="1G")  # a quarter of what is left of 1 GB: under the 200 MB tensor below
    s("torch daemon start")
    log = os.path.join(s.folder, "torchd.log")
    r = s.run("torch profile --format tsv -- bash -c 'x=$(torch ones 50000000); for i in $(seq 600); do "
              "torch sum $x >/dev/null; grep -q \"recording stopped\" %s && exit 0; sleep 0.1; done; exit 9'" % log)
    assert r.code == 0 and "memory grew" in r.err, r  # CMD went on after the recording stopped (the log said so)
