"""The JSON face for programs (the Nushell module, other languages): /v1/ops, /v1/tensors, /v1/status."""
