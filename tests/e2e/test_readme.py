"""The README's 30-second tour runs as written."""
import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def tour():
    text = open(README).read()
    section = text.split("## 30-second tour", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line[4:] for line in section.split("\n") if line.startswith("    "))


def test_the_tour_runs_and_prints_what_it_says(sh):
    script = tour()
    assert "torch matmul" in script and "torch train_step" in script
    out = sh("set -e\n" + script)
    lines = out.split("\n")
    assert lines[0] == "10.0"  # torch matmul $a $b | torch sum | torch value
    assert re.match(r"^tensor://\w+$", lines[1])  # echo $a | torch add $b
    assert re.match(r"^-?\d+(\.\d+)?(e-?\d+)?$", lines[-1])  # train_step prints the loss
