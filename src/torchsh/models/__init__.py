"""What is done with a whole model beyond training it: export.py writes it for other runtimes (ONNX, .pt2) with
its card's preprocessing baked in (preprocessed.py); summary.py lists its module calls and parameter counts as
torchinfo's summary does (`torch nn summary`); checkpoint.py is its file with optimizer, scheduler and RNG
(`torch checkpoint save|load`, and `torch fit`'s checkpoints)."""
