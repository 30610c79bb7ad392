"""`torch profile { … }` in Nushell: the block runs under the profiler, its value is printed, and the block form's
value is the ops table as a nu table (profile finish's rows); the files land in --out; the external transport
refuses the block by name."""
import json
import os


def test_profile_block_gives_the_ops_table_as_a_nu_table_and_writes_the_files(nu, sh):
    folder = sh.tmp("nuprof")
    rows = nu.json("torch profile --out %s --top 50 { torch matmul (torch randn [8 8]) (torch randn [8 8]) | ignore }"
                   % folder)
    assert list(rows[0]) == ["name", "calls", "self_cpu_us", "total_cpu_us", "self_cpu_memory_bytes"]
    assert "aten::mm" in [r["name"] for r in rows]
    assert sorted(os.listdir(folder)) == ["stacks.folded", "trace.json"]


def test_the_blocks_own_value_is_printed_before_the_table(nu):
    out = nu("torch profile --format tsv { 'block-value' } | print")
    assert out.splitlines()[0] == "block-value" and out.splitlines()[1].startswith("name\tcalls")


def test_a_failing_block_still_ends_the_profile(nu):
    r = nu.run("torch profile { error make {msg: 'boom'} }")
    assert r.code != 0 and "boom" in r.err
    assert json.loads(nu("torch profile --format json { } | to json --raw")) == []


def test_the_external_transport_refuses_the_block_by_name(nu, sh, tmp_path):
    path = tmp_path / "torch.nu"
    path.write_text(sh("torch nu-module --transport external") + "\n")
    r = nu.run("torch profile { 'ran' | print }", module=str(path))
    assert r.code != 0 and "needs the socket transport" in r.err and "ran" not in r.out


def test_a_folder_that_holds_a_profile_is_refused_and_overwrite_replaces_it(nu, sh):
    folder = sh.tmp("nuprof-twice")
    nu("torch profile --out %s { torch sum (torch ones [3]) | ignore } | ignore" % folder)
    r = nu.run("torch profile --out %s { 'ran' | print }" % folder)
    assert r.code != 0 and "run_exists" in r.err and "ran" not in r.out, r
    rows = nu.json("torch profile --out %s --overwrite --top 50 { torch matmul (torch randn [2 2]) (torch randn [2 2])"
                   " | ignore }" % folder)
    assert "aten::mm" in [row["name"] for row in rows]
