"""`@name` through Nushell's typed commands (torch.nu): unquoted as a word, piped, and `--name` on a creating op;
`torch names` is a table there."""


def test_a_name_passes_unquoted_through_nu_and_names_is_a_table(nu, sh):
    nu("torch zeros 2 --name nunames/z | ignore")
    assert nu.json("torch add @nunames/z 1 | torch value") == [1.0, 1.0]
    assert nu.json("'@nunames/z' | torch mul 2 | torch value") == [0.0, 0.0]
    rows = nu.json("torch names '@nunames/*'")
    assert [r["name"] for r in rows] == ["@nunames/z"]
    assert "[wrong_kind]" in sh.run("torch forward @nunames/z @nunames/z").err
