"""`torch mcp`: the daemon as a Model Context Protocol tool server for LLM agents (docs/mcp.md).

A separate process and a client of the daemon (same socket, same trust, same handles as the user's shells),
built on the official `mcp` SDK (the `mcp` extra). The daemon never imports this room; it never imports torch.
    server.py     the MCPServer: tools and resources registered, stdio or HTTP served
    link.py       the daemon, spoken to as the `torch` client does, with the server's policy header
    tools.py      search, help, run, inspect, objects (catalog.py: the op table searched)
    artifacts.py  runs, plot, history: answers that are files
    jobs.py       the jobs tool: long work started detached, its progress, result and cancel
    http.py       --http: streamable HTTP on a Unix socket beside the daemon's, and --port (tokens.py)
    bounded.py    every result within 8 KB; store.py keeps the rest as resources torchsh://…
    main.py       the flags (`torch mcp --help`), `--tools`: the definitions and their token count
"""
