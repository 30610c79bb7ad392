"""The `torch` launcher's text (shells/launcher.py): a file Python reads as the client without a word of
complaint, whose bash part is the very protocol text `torch init bash` prints (one source, not two)."""
import re
import warnings

from torchsh.shells import init_bash, launcher

# The functions that speak the protocol; the launcher's own are the folder check and how it runs a block.
PROTOCOL = ("__torchsh_load", "__torchsh_rpc", "__torchsh_call", "__torchsh_remote", "__torchsh_stdin",
            "__torchsh_follow", "torch")


def _function(text, name):
    return re.search(r"^%s\(\) \{.*?^\}$" % re.escape(name), text, re.S | re.M).group(0)


def test_both_launchers_compile_as_python_without_warnings():
    for text in (launcher.wheel(), launcher.dev("/opt/py/bin/python", "/src/tree")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an invalid escape in the bash part would be a SyntaxWarning
            compile(text, "torch", "exec")


def test_the_launcher_speaks_the_protocol_with_the_init_bash_text_itself():
    function, wheel = init_bash.script(), launcher.wheel()
    for name in PROTOCOL:
        assert _function(wheel, name) == _function(function, name).replace("command torch", "__torchsh_client"), name


def test_the_dev_launcher_names_its_interpreter_quoted_and_its_tree():
    text = launcher.dev("/opt/my py/bin/python", "/src/tree", bash="/bin/bash")
    assert text.startswith("#!/bin/bash -p\n''':'\n")
    assert "    exec '/opt/my py/bin/python' -IS \"$0\" \"$@\"\n" in text
    assert text.endswith("sys.path.insert(0, '/src/tree')\nfrom torchsh.client.main import main\nmain()\n")
    assert launcher.dev("/py", "/src", bash=None).startswith("#!/bin/sh\n")  # no bash: sh runs the client
