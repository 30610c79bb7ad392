"""Bash that leaves the shared test daemon as it found it. A name pins its object past a scope's end, so a
test that runs examples making names (`torch name … @exp1/w`) frees them after, or a later test making the
same name meets name_in_use."""

# Set $before to the names held before the examples run
NAMES_BEFORE = "before=$(torch names -q)"
# Frees each name `torch names -q` lists now that was not in $before (outside any scope: the examples' scope
# has ended by then); exits 98 when that fails, so a cleanup that did nothing fails the test
FREE_NEW_NAMES = ("(unset TORCHSH_SCOPE; now=$(torch names -q) || exit 1; for n in $now; do "
                  "case \" $(echo $before) \" in *\" $n \"*) ;; *) torch free $n || exit 1;; esac; done) || exit 98")
