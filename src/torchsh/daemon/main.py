"""`torchd`: take the start lock, build the table, bind the private socket, serve, exit cleanly.

Run by the client's auto-start (detached, output to torchd.log) or by hand in the foreground. It serves from
`/`, never from the folder it was started in: paths are each request's caller's.
Exit 0 when another daemon already serves the socket: that is the race's expected loser. Exit 1,
with the reason in the log, when the socket's folder, lock or socket path is not ours and private
(lifecycle.Untrusted). The log handler rotates torchd.log past $TORCHSH_LOG_MAX_BYTES (10 MiB).
"""
import argparse
import gc
import logging
import os
import signal
import sys
import time

from torchsh import paths, protocol


def main(argv=None):
    args = _parse_args(argv)
    from torchsh.daemon import lifecycle
    sock = _absolute(paths.socket_path(args.socket))
    # Not the folder of the shell that started it, which may be removed while it serves (numpy's loadtxt then
    # fails resolving it): every path a request names is the caller's, joined to its cwd (Context.path)
    os.chdir("/")
    too_long = paths.socket_path_too_long(sock)
    if too_long:  # before the log and lock beside it are made: bind would refuse the path
        sys.stderr.write("torchd: %s; %s [%s]\n" % (too_long, paths.SOCKET_PATH_HINT, paths.SOCKET_PATH_CODE))
        return protocol.exit_status(paths.SOCKET_PATH_CODE)
    handler = lifecycle.RotatingLog(paths.sibling(sock, ".log"),
                                    int(os.environ.get("TORCHSH_LOG_MAX_BYTES") or lifecycle.LOG_MAX_BYTES))
    handler.setFormatter(logging.Formatter("%(asctime)s torchd[%(process)d] %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    log = logging.getLogger("torchd")
    try:
        lifecycle.ensure_private_dir(paths.socket_folder(sock))
        lock_fd = lifecycle.take_start_lock(sock)
    except lifecycle.AlreadyServing as e:
        log.info("%s; exiting", e)
        return 0
    except (lifecycle.Untrusted, OSError) as e:  # refuse a folder or lock another user could have planted
        log.error("refusing to serve %s: %s", sock, e)
        return 1
    from torchsh import memory  # before any tensor: an eager step's freed tensors stay for the next one's
    log.info("malloc: %s", memory.keep_freed_memory() or "as the environment says (MALLOC_*_THRESHOLD_)")
    return _serve(sock, args, lock_fd, log)


def _absolute(path):
    """path, joined to the folder torchd was started in when relative (before it leaves that folder)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="torchd", description="the torchsh daemon")
    parser.add_argument("--socket", default=None, help="Unix socket path (default: $TORCHSH_SOCKET or the runtime dir)")
    parser.add_argument("--ttl", default=os.environ.get("TORCHSH_TTL", "1h"),
                        help="idle time before exiting: 90s, 30m, 2h, none (default: $TORCHSH_TTL or 1h)")
    parser.add_argument("--max-memory", default=os.environ.get("TORCHSH_MAX_MEMORY"),
                        help="memory budget: 512M, 2G, 50%%, none (default: $TORCHSH_MAX_MEMORY or 50%% of "
                             "min(RAM, cgroup limit)); an op whose output would not fit is refused")
    parser.add_argument("--persist", default=None, metavar="DIR",
                        help="save the session to DIR when the daemon stops, load it at start (default: $TORCHSH_PERSIST)")
    parser.add_argument("--listen", default=os.environ.get("TORCHSH_LISTEN") or None,
                        help="also serve remote contexts on tls://ADDR:PORT (a self-signed certificate and a token, "
                             "made at first start beside the socket); plain tcp:// is refused "
                             "(default: $TORCHSH_LISTEN)")
    args = parser.parse_args(argv)
    from torchsh.daemon import lifecycle
    try:
        if args.listen:
            from torchsh.remote.listener import parse_listen
            parse_listen(args.listen)
            os.environ["TORCHSH_LISTEN"] = args.listen  # a restart (execv, or the client's) keeps listening
        args.ttl_seconds = lifecycle.parse_ttl(args.ttl)
        if args.max_memory is not None:
            from torchsh.memory import parse_size
            parse_size(args.max_memory, 1)
    except ValueError as e:
        parser.error(str(e))
    if args.max_memory is not None:
        os.environ["TORCHSH_MAX_MEMORY"] = args.max_memory  # App reads it; a restart (execv) keeps it
    persist = args.persist or os.environ.get("TORCHSH_PERSIST") or ""
    args.persist = os.path.abspath(os.path.expanduser(persist)) if persist.strip() else None
    if args.persist:
        os.environ["TORCHSH_PERSIST"] = args.persist  # a restart (execv) keeps it
    return args


def _serve(sock, args, lock_fd, log):
    """Holding the start lock: build the App, bind the socket, serve until stopped, clean up."""
    from torchsh import fileio
    from torchsh.daemon import fastpath
    from torchsh.daemon.app import App
    from torchsh.daemon.server import Server
    t0 = time.perf_counter()
    fileio.umask()  # read once now: binding and the TLS token set another umask for a moment
    app = App(sock, args.ttl_seconds)
    _table_built(app.table)
    if args.persist:  # before binding: no command sees a half-restored registry
        from torchsh.session import persist
        persist.load_at_start(app, args.persist)
    listener, status = _bind(sock, log)
    if listener is None:
        return status
    log.info("serving %s (epoch %s, %d ops, table %.0f ms, ready in %.2fs)", sock, app.registry.epoch,
             len(app.table), app.table_seconds * 1000, time.perf_counter() - t0)
    server = Server(app, listener)
    try:
        remote = app.tls_listener = _listen_tls(args.listen, sock, server, log)  # status shows it and its certificate
    except (ValueError, OSError) as e:
        log.error("%s", e)
        sys.stderr.write("torchd: %s\n" % e)
        server.close()
        _unlink_quietly(sock)
        return 1
    if os.environ.get(fastpath.ENV_FLAG):  # set by the bash function's auto-start, kept across restart
        app.enable_fastpath()
    signal.signal(signal.SIGTERM, lambda *_: app.request_stop())
    signal.signal(signal.SIGINT, lambda *_: app.request_stop())
    try:
        server.serve()  # returns once stopped and the requests in flight are answered (grace period)
        if args.persist:
            persist.save_at_stop(app, args.persist)
    finally:
        fastpath.disable(app)  # remove the token file: a stale port must not look alive
        app.staging.close()
        if remote is not None:
            remote.close()
        if server.watch.ours():  # never unlink a file that replaced our socket
            _unlink_quietly(sock)
        server.close()
        os.close(lock_fd)
    if app.restart_requested:
        log.info("restarting")
        os.execv(sys.executable, paths.python_m("torchsh.daemon", "--socket", sock, "--ttl", args.ttl,
                                                *(["--listen", args.listen] if args.listen else [])))
    log.info("stopped")
    os._exit(0)  # a request still running past the grace period must not hold the exit


def _table_built(table):
    """Once the op table is built: the cyclic GC leaves it alone (~175k objects that live forever, walked on
    every sweep otherwise), and its overview is kept for `torch` with no daemon, printed then without
    importing PyTorch (cachefiles.py)."""
    gc.freeze()
    from torchsh import cachefiles
    from torchsh.cli.help import overview
    cachefiles.keep_overview(overview(table))


def _bind(sock, log):
    """(the private socket, None), or (None, the exit status) when another daemon serves it (0) or its
    folder is not ours (1)."""
    from torchsh import privatesocket
    try:
        return privatesocket.bind_private(sock), None
    except privatesocket.AlreadyServing as e:
        log.info("%s; exiting", e)
        return None, 0
    except privatesocket.Untrusted as e:
        log.error("refusing to serve %s: %s", sock, e)
        return None, 1


def _listen_tls(url, sock, server, log):
    """`--listen tls://ADDR:PORT`: the remote contexts' door of the server's loop, served as its Unix socket is
    (remote/listener.py), or None without one. Prints the certificate's fingerprint, which a client pins
    (`torch context create --fingerprint`)."""
    if not url:
        return None
    from torchsh.remote.listener import TLSListener
    remote = TLSListener(url, sock)
    server.doors.open(remote.door(server.unix))  # before the loop runs: it opens it first thing
    line = "listening on tls://%s:%d; certificate %s; token in %s" % (
        remote.addr, remote.port, remote.fingerprint, remote.token_file)
    log.info("%s", line)
    sys.stdout.write("torchd: %s\n" % line)
    sys.stdout.flush()
    return remote


def _unlink_quietly(sock):
    # Safe while we still hold the start lock: no other daemon can have bound this path yet.
    try:
        os.unlink(sock)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
