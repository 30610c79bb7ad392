"""`torch ops --excluded` in Nushell: a table of name, group, reason that nu's own commands filter."""
import json


def test_excluded_ops_are_a_nu_table_of_name_group_and_reason(nu):
    out = json.loads(nu("""
let left = (torch ops --excluded)
{
  type: ($left | describe | str substring 0..4),
  columns: ($left | columns),
  removed: ($left | where group == removed | get name),
  cholesky: ($left | where name == cholesky | get 0.reason),
  grouped: (torch ops --excluded deprecated | get group | uniq)
} | to json --raw | print
"""))
    assert out["type"] == "table" and out["columns"] == ["name", "group", "reason"]
    assert "eig" in out["removed"] and "deprecated" in out["cholesky"]
    assert out["grouped"] == ["deprecated"]
