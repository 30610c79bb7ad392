"""`python -m torchsh.agents [FLAGS]`: what `torch mcp` runs in the caller's world."""
import sys

from torchsh.agents.main import main

sys.exit(main())
