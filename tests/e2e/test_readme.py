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


def section(title):
    text = open(README).read()
    body = text.split("## " + title, 1)[1].split("\n## ", 1)[0]
    return "\n".join(line[4:] for line in body.split("\n") if line.startswith("    "))


def test_train_on_data_runs_as_written_and_resumes_to_ten_epochs(sh, tmp_path):
    script = section("Train on data")
    assert "torch data open" in script and "torch fit" in script and "torch plot" in script
    out = sh("set -e\ncd %s\n%s" % (tmp_path, script), timeout=600)
    epochs = [int(line.split()[0]) for line in out.split("\n") if re.match(r"^\d+\s+[\d.]+\s", line)]
    assert epochs == list(range(1, 11))  # five, then the resumed run's 6..10
    assert "val_loss:" in out and "accuracy" in out  # the chart's legend; the metric column


def test_sessions_runs_as_written_and_the_model_trains_on_in_a_fresh_daemon(sh, tmp_path):
    """On a daemon of its own: the section stops the daemon it runs on."""
    from support.second_daemon import SecondDaemon
    script = section("Sessions that outlive a daemon")
    assert "torch session save" in script and "torch daemon stop" in script and "torch session load" in script
    own = SecondDaemon(sh, "readme")
    try:
        lines = own("set -e\ncd %s\n%s" % (tmp_path, script), timeout=300).split("\n")
    finally:
        own.stop()
    assert lines[0].startswith("saved 5 objects to ") and lines[1].startswith("torchd stopped"), lines
    assert lines[2] == "restored 5 objects"  # w, the model, its optimizer and the batch, under their handles
    assert re.match(r"^-?\d+(\.\d+)?(e-?\d+)?$", lines[3])  # the train_step after the load prints its loss
