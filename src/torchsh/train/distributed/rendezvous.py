"""The rendezvous of `fit --nproc_per_node N`: torch.distributed's static TCP rendezvous, with a store that
listens only where it must.

Why not elastic's own backends: PyTorch's TCPStore server listens on every interface (it has no bind
address), it authenticates nothing, and the "c10d" backend (torchrun's default) keeps its state in that
store as a pickle that every agent unpickles. A store open to the network was a way into the launcher.
So the launcher registers this backend, "torchsh-static": the store is a TCPStore server on a socket
bound here (TCPStore's master_listen_fd), to 127.0.0.1 on one node, and on several nodes to the --rdzv
address itself, which node 0 must own. Nothing in this rendezvous is pickled (the static rendezvous
stores ranks and addresses as bytes). The workers connect to the same store (use_agent_store).
"""
import datetime
import socket

from torch.distributed import PrefixStore, TCPStore
from torch.distributed.elastic.rendezvous import (RendezvousHandler, RendezvousInfo, RendezvousParameters,
                                                  RendezvousStoreInfo, rendezvous_handler_registry)
from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

BACKEND = "torchsh-static"
LISTEN_BACKLOG = 128


def listen_socket(host, port):
    """A TCP socket listening on HOST:PORT (one address, never all of them); OSError when HOST is not an
    address of this machine."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


class AddressNotHere(Exception):
    """Node 0 cannot listen on --rdzv's address: it is not one of this machine's."""


class BoundStaticRendezvous(RendezvousHandler):
    """Elastic's static rendezvous (node 0 hosts the store; the other nodes connect to it) with node 0's
    store on a socket bound to the endpoint's own address."""

    def __init__(self, host, port, rank, world_size, run_id, timeout):
        self.host, self.port, self.rank, self.world_size = host, port, rank, world_size
        self.run_id, self.timeout = run_id, datetime.timedelta(seconds=timeout)
        self._listener = None  # node 0's bound socket; the store serves on it while this handler lives
        self._store = None

    def get_backend(self):
        return BACKEND

    @property
    def use_agent_store(self):
        return True  # the ranks join this store as clients: they listen on nothing of it

    def next_rendezvous(self):
        if self._store is None:
            if self.rank == 0:
                try:
                    self._listener = listen_socket(self.host, self.port)
                except OSError as e:
                    raise AddressNotHere("node 0 hosts the rendezvous at %s:%d, which it cannot listen on (%s)"
                                         % (self.host, self.port, e.strerror)) from None
                self.port = self._listener.getsockname()[1]  # port 0: the one the kernel chose
                self._store = TCPStore(self.host, self.port, self.world_size, True, self.timeout,
                                       master_listen_fd=self._listener.fileno())
            else:
                self._store = TCPStore(self.host, self.port, self.world_size, False, self.timeout)
        return RendezvousInfo(PrefixStore(self.run_id, self._store), self.rank, self.world_size,
                              RendezvousStoreInfo(self.host, self.port))

    def is_closed(self):
        return False

    def set_closed(self):
        pass

    def num_nodes_waiting(self):
        return 0

    def get_run_id(self):
        return self.run_id

    def shutdown(self):
        if self._listener is not None:
            self._listener.close()
        return True


def _create(params: RendezvousParameters):
    host, port = parse_rendezvous_endpoint(params.endpoint, -1)
    return BoundStaticRendezvous(host, port, int(params.config["rank"]), params.max_nodes, params.run_id,
                                 int(params.config["timeout"]))


def register():
    rendezvous_handler_registry.register(BACKEND, _create)
