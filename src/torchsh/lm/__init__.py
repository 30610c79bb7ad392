"""Language models (`torch lm`, the `lm` extra): a local Hugging Face folder opened as one object that holds the
model, its tokenizer and its LoRA adapters (model.py); the folder's checks (folder.py); the libraries imported
offline (library.py); generation as a job's work (generation.py); tiny models made from configs (tiny.py).

Nothing here imports transformers at import time: the daemon pays for it on the first `torch lm` command."""
