"""Two sockets joined: bytes read from either are written to the other until one side ends.

Used by a TLS context's forwarder (client/contexts/forwarder.py: a local client's Unix connection in, TLS
out); the daemon's end is a door of its server loop (remote/listener.py), not a relay. Blocking sockets and
select(): the traffic is HTTP request then reply, so one direction waits while the other flows. TLS buffers whole records, so its pending()
bytes are read before select() is asked again.
"""
import select
import ssl

IDLE_S = 900.0  # a connection with no byte either way this long is closed (the daemon's own idle limit is 600 s)


def pump(a, b, idle_s=IDLE_S):
    socks = (a, b)
    try:
        while True:
            ready = [s for s in socks if isinstance(s, ssl.SSLSocket) and s.pending()]
            if not ready:
                ready = select.select(socks, (), (), idle_s)[0]
                if not ready:
                    return
            for s in ready:
                try:
                    data = s.recv(1 << 18)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    continue
                if not data:
                    return
                (b if s is a else a).sendall(data)
    except (OSError, ValueError):  # a reset, a TLS alert, a socket closed under us: the connection ends
        return
    finally:
        for s in socks:
            try:
                s.close()
            except OSError:
                pass
