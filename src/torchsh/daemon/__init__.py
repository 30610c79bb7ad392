"""torchd as a process: transport and lifecycle. No tensor logic lives here."""
