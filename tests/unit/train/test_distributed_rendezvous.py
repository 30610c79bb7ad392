"""The launcher's rendezvous: node 0's store listens on the one address it is given, never on all."""
import datetime

import pytest
from torch.distributed import TCPStore

from torchsh.train.distributed import rendezvous


def test_node_0s_store_listens_on_the_given_loopback_address_and_a_rank_reaches_it():
    rdzv = rendezvous.BoundStaticRendezvous("127.0.0.1", 0, 0, 1, "run", 10)
    try:
        info = rdzv.next_rendezvous()
        assert rdzv._listener.getsockname()[0] == "127.0.0.1"
        port = info.bootstrap_store_info.master_port
        assert port == rdzv._listener.getsockname()[1] and port > 0
        info.store.set("k", "v")
        rank = TCPStore("127.0.0.1", port, 1, False, datetime.timedelta(seconds=10))
        assert rank.get("run/k") == b"v"  # the run id prefixes the rendezvous's keys
    finally:
        rdzv.shutdown()


def test_an_address_that_is_not_this_hosts_is_one_clear_failure():
    rdzv = rendezvous.BoundStaticRendezvous("192.0.2.1", 29500, 0, 2, "run", 10)  # TEST-NET-1: no host owns it
    with pytest.raises(rendezvous.AddressNotHere, match="192.0.2.1:29500"):
        rdzv.next_rendezvous()
