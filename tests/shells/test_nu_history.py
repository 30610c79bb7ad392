"""`torch history` in Nushell is a table of records, as the op table's Json return makes every listing."""


def test_history_is_a_table_in_nu(sh, nu):
    sh("torch zeros 2 >/dev/null; torch ones 3 >/dev/null")  # two entries whatever ran before (alone: none)
    rows = nu.json("torch history --last 2")
    assert isinstance(rows, list) and len(rows) == 2
    assert {"seq", "op", "args", "outputs", "exit", "random"} <= set(rows[-1])
    assert [r["op"] for r in rows] == ["zeros", "ones"] and rows[-1]["seq"] > rows[0]["seq"]
