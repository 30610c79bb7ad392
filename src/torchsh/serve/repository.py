"""The models a daemon serves, by name: an object its App owns (app.served), as KServe's ModelRepository. The
serve verb adds a served model (serve/batcher.Served; a language model: serve/lmserved.ServedLM) and removes it once its job ends; the V2 routes
(serve/edge.py) look models up in it through the app they are handed.
"""
import threading

from torchsh.errors import TorchshError

WORDS = {"v2": "over KServe V2", "openai": "OpenAI-style (torch serve --openai)"}
ROUTES = {"v2": "POST /v2/models/NAME/infer", "openai": "POST /v1/chat/completions with \"model\": \"NAME\""}


class ModelRepository:
    def __init__(self):
        self._served = {}  # name -> Served
        self._lock = threading.Lock()

    def add(self, served):
        """Serve under its name: a name is served once (name_in_use)."""
        with self._lock:
            if served.name in self._served:
                raise TorchshError("name_in_use", "a model is served as %s already" % served.name,
                                   "choose another --name, or stop it: torch job list; torch job stop JOB")
            self._served[served.name] = served

    def remove(self, served):
        """Its name is free again (the serve job ended); a later model served under it is left alone."""
        with self._lock:
            if self._served.get(served.name) is served:
                del self._served[served.name]

    def get(self, name, protocol=None):
        """The model served as NAME (unknown_model), over PROTOCOL when given ("v2", "openai": its routes')."""
        served = self._served.get(name)
        if served is None:
            raise TorchshError("unknown_model", "no model is served as %s" % name,
                               "served: %s" % (", ".join(self.names()) or "none"))
        if protocol is not None and served.protocol != protocol:
            raise TorchshError("unknown_model", "%s is served %s" % (name, WORDS[served.protocol]),
                               "its routes: %s" % ROUTES[served.protocol].replace("NAME", name))
        return served

    def served(self, protocol):
        """The models served over PROTOCOL, by name."""
        with self._lock:
            return [self._served[n] for n in sorted(self._served) if self._served[n].protocol == protocol]

    def names(self):
        return sorted(self._served)
