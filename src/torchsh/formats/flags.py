"""The flags that pick and parse columns, as `torch load` and `torch data open` take them: --columns (a group
of names or 0-based indices; each further --columns one more group), --header / --no-header, --delimiter.
"""
import json

from torchsh.errors import bad_argument


def table_options(ext, columns, header, no_header, delimiter):
    """The CSV flags, checked: {groups (lists of names or indices), several (--columns given more than once),
    header (None: detect), delimiter}; {} for other formats, which take none of them."""
    given = [name for name, value in (("columns", columns), ("header", header), ("delimiter", delimiter))
             if value is not None and value is not False] + (["no-header"] if no_header else [])
    if ext != ".csv":
        if given:
            raise bad_argument("--%s applies to .csv files only" % given[0])
        return {}
    if no_header and header:
        raise bad_argument("--header and --no-header contradict each other")
    delimiter = {None: ",", "\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
    if len(delimiter) != 1 or delimiter in "\"\r\n":
        raise bad_argument("--delimiter must be one character other than a quote or newline, got %r" % delimiter,
                           "e.g. --delimiter ';', or --delimiter tab")
    if isinstance(columns, str) and columns.startswith("["):  # the JSON API's list: {"columns": ["x1,x2", "y"]}
        columns = _json_list(columns)
    groups, several = None, isinstance(columns, list)  # a repeated --columns arrives as a list
    if columns is not None:
        groups = [column_group(g) for g in (columns if several else [columns])]
    return {"groups": groups, "several": several, "header": False if no_header else header, "delimiter": delimiter}


def column_group(group):
    """One --columns value (`x1,x2`, `0,3`, or a JSON list of names/indices) as a list of names or indices."""
    items = group if isinstance(group, list) else str(group).split(",")
    items = [str(c).strip() for c in items if str(c).strip()]
    if not items:
        raise bad_argument("--columns needs column names or indices", "e.g. --columns x1,x2 or --columns 0,1")
    return items


def _json_list(text):
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list):
        raise bad_argument("--columns %s is not a list of column groups" % text[:60], 'e.g. ["x1,x2", "y"]')
    return value
