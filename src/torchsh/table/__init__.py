"""THE table: every op and verb that the CLI, --help, `torch ops`, the JSON API, OpenAPI, the Nushell
module and the completions know. Rows are OpSpec; build_table() fills them from PyTorch and verbs/."""
from torchsh.table.spec import ArgSpec, Overload, OpSpec, MISSING
from torchsh.table.build import OpTable, build_table

__all__ = ["ArgSpec", "Overload", "OpSpec", "MISSING", "OpTable", "build_table"]
