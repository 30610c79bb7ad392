"""Values as text, shared by both faces and the rooms below them: tensors (tensortext.py, float32text.py), JSON
bytes of results (jsonout.py), "did you mean" (suggest.py), durations (durations.py), rows as columns (columns.py)."""
