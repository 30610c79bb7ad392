"""`torchd`: take the start lock, build the table, bind the private socket, serve, exit cleanly.

Run by the client's auto-start (detached, output to torchd.log) or by hand in the foreground.
Exit 0 when another daemon already serves the socket: that is the race's expected loser.
"""
import argparse
import gc
import logging
import os
import signal
import sys
import time

from torchsh import protocol


def main(argv=None):
    parser = argparse.ArgumentParser(prog="torchd", description="the torchsh daemon")
    parser.add_argument("--socket", default=None, help="Unix socket path (default: $TORCHSH_SOCKET or the runtime dir)")
    parser.add_argument("--ttl", default=os.environ.get("TORCHSH_TTL", "1h"),
                        help="idle time before exiting: 90s, 30m, 2h, none (default: $TORCHSH_TTL or 1h)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s torchd[%(process)d] %(levelname)s %(message)s")
    log = logging.getLogger("torchd")
    from torchsh.daemon import lifecycle
    try:
        ttl = lifecycle.parse_ttl(args.ttl)
    except ValueError as e:
        parser.error(str(e))
    sock = protocol.socket_path(args.socket)
    lifecycle.ensure_private_dir(os.path.dirname(sock) or ".")
    try:
        lock_fd = lifecycle.take_start_lock(sock)
    except lifecycle.AlreadyServing as e:
        log.info("%s; exiting", e)
        return 0
    t0 = time.perf_counter()
    from torchsh.daemon.app import App
    from torchsh.daemon.server import Server
    app = App(sock, ttl)
    gc.freeze()  # the op table (~175k objects) lives forever: keep the cyclic GC from walking it on every sweep
    try:
        listener = lifecycle.bind_private(sock)
    except lifecycle.AlreadyServing as e:
        log.info("%s; exiting", e)
        return 0
    log.info("serving %s (epoch %s, %d ops, table %.0f ms, ready in %.2fs)", sock, app.registry.epoch,
             len(app.table), app.table_seconds * 1000, time.perf_counter() - t0)
    server = Server(app, listener)
    from torchsh.daemon import fastpath
    if os.environ.get(fastpath.ENV_FLAG):  # set by the bash function's auto-start, kept across restart
        fastpath.enable(app)
    signal.signal(signal.SIGTERM, lambda *_: app.request_stop())
    signal.signal(signal.SIGINT, lambda *_: app.request_stop())
    try:
        server.serve()
    finally:
        fastpath.disable(app)  # remove the token file: a stale port must not look alive
        _unlink_quietly(sock)
        server.close()
        os.close(lock_fd)
    if app.restart_requested:
        log.info("restarting")
        os.execv(sys.executable, [sys.executable, "-m", "torchsh.daemon", "--socket", sock, "--ttl", args.ttl])
    log.info("stopped")
    os._exit(0)  # worker threads may be parked in recv() on idle keep-alive connections


def _unlink_quietly(sock):
    # Safe while we still hold the start lock: no other daemon can have bound this path yet.
    try:
        os.unlink(sock)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
