"""A fit's loss: losses by name with their options (functions.py), the one chosen when --loss is not given and
its check against the targets' dtype (choice.py), and the targets' shape reconciled with the output's before the
first step (check.py)."""
