"""The follow reply, carried out by the client (protocol.REPLIES): a job's output polled to its end (`torch fit`,
`job wait`, `job logs -f`), Ctrl-C on a foreground run turned into stopping it at a step boundary. Builtins
only, like the client; imported only when a command answers with it."""
from torchsh import protocol
from torchsh.client.wire import call, connect, fail, write


def run(path, request, headers, body, name=None):
    """Follow a job (`torch fit`, `job wait`, `job logs -f`): write each reply, stderr first (it clears
    a terminal's progress line before a row is printed under it), then send the poll its follow header
    names, until a reply has none: its exit status is ours. Ctrl-C during a foreground run (STOPS "1")
    adds --interrupt to the next poll, which stops the job at its next step boundary; following goes on
    to the job's end (`stopped at …`, status 130). A second Ctrl-C, or one while only watching, leaves."""
    interrupt = None  # None: no Ctrl-C yet; True: the next poll carries --interrupt; False: it was sent
    stops = headers[protocol.H_FOLLOW][:1]
    while True:
        try:
            if body is not None:
                out_len = int(headers.get(protocol.H_STDOUT, len(body)))
                write(2, memoryview(body)[out_len:])
                write(1, memoryview(body)[:out_len])
                body = None
            follow = headers.get(protocol.H_FOLLOW)
            if follow is None:
                if protocol.H_DOWNLOAD in headers:  # a remote context's run wrote the caller's --log folder
                    from torchsh.client import filerelay
                    filerelay.download(path, headers[protocol.H_DOWNLOAD], request["argv"][0].decode(errors="replace"))
                return int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))
            stops, _, words = follow.partition(" ")
            argv = words.encode().split(b" ") + ([b"--interrupt"] if interrupt else [])
            try:
                conn = connect(path)
            except OSError:
                fail("daemon_unavailable", "the daemon went away while following a job", "its objects are gone")
            _, reply_headers, body = call(conn, dict(request, argv=argv, stdin_lines=None))
            conn.close()
            headers, interrupt = reply_headers, (False if interrupt else interrupt)
        except KeyboardInterrupt:
            if stops != "1" or interrupt is False:
                raise
            interrupt = True  # the reply being read, if any, is lost: the same poll is sent again
