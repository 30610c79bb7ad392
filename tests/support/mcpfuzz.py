"""Command lines for the bounds fuzz (tests/e2e/test_mcp_bounds.py): for each row of the op table (`torch ops
--json`), one argv whose first tensor slot holds the big tensor's handle and whose other required arguments
hold small plausible values, so that the command runs (or fails on its own terms, fast) rather than stopping
at a missing argument.

The argv follows the row's first overload that has a tensor slot (else its first): arguments that are not
keyword-only go positionally in order, up to the first optional one; keyword-only required ones as `--NAME
VALUE`. A command without a tensor slot gets the big handle as its only positional argument (what an agent
that put a tensor in the wrong place would send).
"""
import os

TENSOR_KINDS = ("tensor", "tensors", "handles")
# A required argument of these kinds gets this word: small, valid for most ops, and cheap on 10^8 elements.
FILLERS = {"int": "0", "scalar": "1", "float": "0.5", "bool": "false", "int_list": "1", "dtype": "float32",
           "str": "x", "float_list": "1", "argv": "zeros", "distribution": None}


def is_tensor_slot(arg):
    return arg["kind"] in TENSOR_KINDS or (arg["kind"] == "json" and "Tensor" in arg["type"])


def overload_with_tensor(row):
    for overload in row["overloads"]:
        if any(is_tensor_slot(a) for a in overload["args"]):
            return overload
    return None


def words(name):
    """The command's words: nn.linear -> nn linear."""
    return name.split(".")


def argv_for(row, big, small, objects, folder):
    """The fuzz's argv for op ROW: BIG in the first tensor slot, SMALL in the others; OBJECTS: {kind: handle}
    of a small module and optimizer for the slots of those kinds; FOLDER: where file arguments point."""
    overload = overload_with_tensor(row)
    if overload is None:
        return words(row["name"]) + [big]
    positional, flags, placed, skipped = [], [], False, False
    for arg in overload["args"]:
        if is_tensor_slot(arg) and not placed:
            word, placed = big, True
        elif not arg["required"]:
            skipped = True  # an optional positional left out: those after it go as flags
            continue
        else:
            word = value_for(arg, small, objects, folder)
        if word is None:
            skipped = True
        elif arg["keyword_only"] or skipped:
            flags += ["--" + arg["name"], word]
        else:
            positional.append(word)
    return words(row["name"]) + positional + flags


def value_for(arg, small, objects, folder):
    """A word for a required argument that is not the first tensor slot (None: leave it out)."""
    if is_tensor_slot(arg):
        return small
    if arg["kind"] in ("path", "out_path", "dir_path", "out_dir_path", "paths"):
        return os.path.join(folder, "fuzz-" + arg["name"])
    if arg["kind"] in objects:
        return objects[arg["kind"]]
    return FILLERS.get(arg["kind"])
