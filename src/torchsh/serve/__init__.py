"""`torch serve`: a model served over HTTP with the KServe V2 inference protocol (docs/serve.md).

v2.py turns V2 JSON into flat typed arrays and back (pure); batcher.py is the served model: its request queue
and the batch loop that runs as the serve job; repository.py the models by name, which the daemon's App owns
(app.served); metrics.py counts what it did; edge.py answers the V2 routes
(the daemon's Unix socket through daemon/routes.py, and --port); tcp.py is --port's door of the daemon's one
server loop (wire/doors.py).
"""
