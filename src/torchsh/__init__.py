"""torchsh: PyTorch as a first-class citizen of the Unix shell. Imports nothing (the client pays for every import)."""
__version__ = "0.1.0"
