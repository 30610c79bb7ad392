"""`bench/run.py --against REV`: this tree and REV side by side in one run, interleaved, with their ratio.

REV is checked out with `git worktree add --detach` into a temporary folder and given a view of this tree's
venv (torch is not installed again): a venv of its own whose site-packages names REV/src and then .venv's
site-packages, and REV's own `torch`/`torchd` launchers, written by REV's own torchsh.install. A daemon
started for REV (locally, or by an ssh context's login) is REV's code, whatever the environment says.

Each side runs its own tree's `bench/run.py --only GROUP --json FILE` (its rows, its harness: the bench
speaks to the tree's internals, which move), in rounds; within a round the two sides run one after the
other, the order alternating (A B, B A, ...) so a slow spell of the machine hits both. A row's figure is
the median over rounds of that run's median, with min-max; the ratio is this tree / REV, and a row more
than 20 % slower here (a time, or a rate's inverse) is flagged. Rows are matched by name; a group whose
bench file differs between the trees is marked, since its rows may measure differently.
The worktree and the view are removed at the end, pass or fail.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench.common import ROOT

SLOWER = 1.20  # a row more than 20 % slower than REV is flagged


def git(*args):
    return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True, check=True).stdout.strip()


def this_label():
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src", "bench", "tests")
    return "this tree (%s%s)" % (git("rev-parse", "--short", "HEAD"), " + edits" if dirty else "")


def site_packages():
    """.venv's site-packages: where torch and the test extras are (this interpreter's)."""
    import site
    return next(p for p in site.getsitepackages() if p.endswith("site-packages"))


class Checkout:
    """REV in a temporary worktree, with its view venv; a context manager that removes both."""

    def __init__(self, rev):
        self.commit = git("rev-parse", "--verify", rev + "^{commit}")
        self.label = git("rev-parse", "--short", self.commit)
        self.folder = tempfile.mkdtemp(prefix="tshb-against-")
        self.tree = os.path.join(self.folder, "tree")
        self.venv = os.path.join(self.folder, "venv")
        self.python = os.path.join(self.venv, "bin", "python")

    def __enter__(self):
        try:
            git("worktree", "add", "--detach", self.tree, self.commit)
            self._view()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _view(self):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", self.venv], check=True)
        version = "python%d.%d" % sys.version_info[:2]
        with open(os.path.join(self.venv, "lib", version, "site-packages", "torchsh-against.pth"), "w") as f:
            f.write("%s\n%s\n" % (os.path.join(self.tree, "src"), site_packages()))
        # REV's own launchers, written by REV's installer, naming the view's interpreter
        subprocess.run([self.python, "-c", "import torchsh.install as i; i.install()"], check=True,
                       stdout=subprocess.DEVNULL)
        where = subprocess.run([self.python, "-c", "import torchsh; print(torchsh.__file__)"], check=True,
                               capture_output=True, text=True).stdout.strip()
        if not where.startswith(self.tree + os.sep):
            raise RuntimeError("the view of %s imports torchsh from %s" % (self.label, where))

    def __exit__(self, *exc):
        try:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", self.tree], capture_output=True)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            subprocess.run(["git", "-C", ROOT, "worktree", "prune"], capture_output=True)

    def bench_differs(self, group):
        """Does REV's bench/GROUP.py differ from this tree's (uncommitted edits included)?"""
        ours, theirs = (os.path.join(t, "bench", group + ".py") for t in (ROOT, self.tree))
        if not (os.path.exists(ours) and os.path.exists(theirs)):
            return True
        with open(ours, "rb") as a, open(theirs, "rb") as b:
            return a.read() != b.read()


def run_side(python, tree, group, quick, device, out):
    """One run of `tree`'s bench/run.py for one group -> (rows, notes)."""
    argv = [python, os.path.join(tree, "bench", "run.py"), "--only", group, "--json", out]
    argv += ["--quick"] if quick else []
    argv += ["--device", device] if device else []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
    if p.returncode or not os.path.exists(out):
        return [], ["%s failed (exit %d): %s" % (group, p.returncode, (p.stderr.strip().splitlines() or [""])[-1])]
    with open(out) as f:
        doc = json.load(f)
    os.unlink(out)
    return doc["rows"], doc["meta"].get("skipped", [])


def figure(r):
    return r["value"] if "value" in r else r.get("median_ms")


def higher_is_better(r):
    return "value" in r and (r["unit"].endswith("/s") or r["unit"] == "rps")


def compare(groups, checkout, rounds, quick, device, say):
    """{group: {row name: {side: [figures]}}}, rows' units, notes; the sides interleaved round by round."""
    sides = {"this": (sys.executable, ROOT), "rev": (checkout.python, checkout.tree)}
    figures, first, notes = {}, {}, []
    out = os.path.join(checkout.folder, "rows.json")
    for group in groups:
        figures[group] = {}
        for n in range(rounds):
            order = ("this", "rev") if n % 2 == 0 else ("rev", "this")
            for side in order:
                say("%s: round %d/%d, %s" % (group, n + 1, rounds, "this tree" if side == "this" else checkout.label))
                rows, skipped = run_side(*sides[side], group, quick, device, out)
                notes += ["%s (%s)" % (s, side if side == "this" else checkout.label) for s in skipped]
                for r in rows:
                    if figure(r) is not None:
                        figures[group].setdefault(r["name"], {"this": [], "rev": []})[side].append(figure(r))
                        first.setdefault(r["name"], r)
    return figures, first, sorted(set(notes))


def verdict(r, this, rev):
    """(ratio this/REV, flagged) for one row's medians."""
    if not this or not rev or rev == 0:
        return None, False
    ratio = this / rev
    slower = (1 / ratio) if higher_is_better(r) else ratio
    return ratio, slower > SLOWER


def _cell(r, xs):
    if not xs:
        return "-"
    fmt = (lambda v: _value(v, r["unit"])) if "value" in r else _time
    med = fmt(statistics.median(xs))
    return med if len(xs) == 1 else "%s (%s-%s)" % (med, fmt(min(xs)), fmt(max(xs)))


def _time(ms):
    return "%.1f us" % (ms * 1000) if ms < 1 else ("%.2f ms" % ms if ms < 100 else "%.0f ms" % ms)


def _value(v, unit):
    return ("%.0f %s" if abs(v) >= 100 else "%.3g %s") % (v, unit)


def table(figures, first, checkout, notes, header):
    head = ("benchmark", checkout.label, header, "ratio", "")
    lines, flagged = [], 0
    for group, rows in figures.items():
        mark = " *" if checkout.bench_differs(group) else ""
        for name, sides in rows.items():
            r = first[name]
            this = statistics.median(sides["this"]) if sides["this"] else None
            rev = statistics.median(sides["rev"]) if sides["rev"] else None
            ratio, flag = verdict(r, this, rev)
            flagged += flag
            lines.append(("%s%s" % (name, mark), _cell(r, sides["rev"]), _cell(r, sides["this"]),
                          "-" if ratio is None else "%.2fx" % ratio, "SLOWER" if flag else ""))
    widths = [max(len(x[i]) for x in lines + [head]) for i in range(len(head))]
    fmt = " | ".join("%%-%ds" % w for w in widths)
    out = [fmt % head, "-+-".join("-" * w for w in widths)] + [fmt % line for line in lines]
    out.append("cells: median over rounds of each run's median (min-max); ratio: this tree / %s; SLOWER: more "
               "than %d%% slower here (a rate's inverse)" % (checkout.label, round(100 * (SLOWER - 1))))
    if any(checkout.bench_differs(g) for g in figures):
        out.append("*: this group's bench file differs between the trees; its rows may measure differently")
    out += ["note: %s" % s for s in notes]
    return "\n".join(out), flagged
