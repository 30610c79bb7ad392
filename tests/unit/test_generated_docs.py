"""The exit-status documentation is generated from protocol.ERRORS and EXIT_CLASSES: the README's table
(a marked section tools/regen.py rewrites), docs/errors.md and the line `torch --help` ends with."""
import pathlib
import re
import sys

from torchsh import errors, protocol

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _regen():
    sys.path.insert(0, str(ROOT / "tools"))
    import regen
    return regen


def _readme_exit_rows():
    text = (ROOT / "README.md").read_text()
    section = text.split("<!-- exit-table:begin", 1)[1].split("<!-- exit-table:end -->", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (\d+) \| [^|]+ \|(.*)\|$", line)
        if m:
            rows[int(m.group(1))] = set(re.findall(r"`(\w+)`", m.group(2)))
    return rows


def test_the_readme_exit_table_lists_every_error_code_under_its_exit_status():
    rows = _readme_exit_rows()
    assert sorted(rows) == sorted(protocol.EXIT_CLASSES)
    for code, (_, status, _) in protocol.ERRORS.items():
        assert code in rows[status], "README's exit table lacks %s under status %d" % (code, status)
    assert set().union(*rows.values()) == set(protocol.ERRORS)


def test_every_exit_status_an_error_code_maps_to_has_a_class_and_a_help_name():
    for code, (_, status, _) in protocol.ERRORS.items():
        assert status in protocol.EXIT_CLASSES, code
    line = errors.exit_status_line()
    for status, (short, _) in protocol.EXIT_CLASSES.items():
        assert "%d %s" % (status, short) in line


def test_docs_errors_md_has_a_row_for_every_code():
    text = (ROOT / "docs" / "errors.md").read_text()
    for code, (http, status, _) in protocol.ERRORS.items():
        assert "| `%s` | %d | %d |" % (code, http, status) in text


def test_regen_rewrites_only_the_marked_section_and_check_names_the_file(tmp_path, monkeypatch, capsys):
    regen = _regen()
    doc = tmp_path / "README.md"
    doc.write_text("# title\n\nhand text\n<!-- t:begin: generated -->\nold table\n<!-- t:end -->\n\nmore hand text\n")
    monkeypatch.setattr(regen, "ROOT", str(tmp_path))
    monkeypatch.setattr(regen, "ARTIFACTS", [("README.md", lambda table: "new table\n", "t")])
    assert regen.main(["--check"]) == 1 and "stale: README.md" in capsys.readouterr().out
    regen.main([])
    assert doc.read_text() == ("# title\n\nhand text\n<!-- t:begin: generated -->\nnew table\n<!-- t:end -->\n\n"
                               "more hand text\n")
    assert regen.main(["--check"]) == 0


def test_regen_refuses_a_file_without_the_section_markers(tmp_path, monkeypatch):
    regen = _regen()
    (tmp_path / "README.md").write_text("# no markers here\n")
    monkeypatch.setattr(regen, "ROOT", str(tmp_path))
    monkeypatch.setattr(regen, "ARTIFACTS", [("README.md", lambda table: "x\n", "t")])
    try:
        regen.stale(table=object())
    except SystemExit as e:
        assert "README.md" in str(e) and "t:begin" in str(e)
    else:
        raise AssertionError("a missing marker must stop regen, not append or overwrite the file")
