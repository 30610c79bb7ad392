"""Text written into code that torchsh generates: one function per target language, used at every site.

A file name, a handle's name, a class name, a dict key or any other text that is not torchsh's own never
goes into a generated script raw: a newline in a file name would start a live line of a script that people
share and run (`torch history --python`), a quote would end a string early. So:

- Python (the history script): python_string() writes any text as a string literal of printable ASCII
  (ascii(): a newline, a quote, a backslash, U+202E, an escape character all come out escaped); a comment
  quotes what is not ours through python_string() too, and python_comment() refuses a comment that could
  still break its line; python_name() lets through only what is an identifier (or a dotted path of them),
  for the few places where text becomes a name: a class, a function, a keyword argument.
- a POSIX shell (bash, zsh, sh): shell_word(), one single-quoted word (shlex.quote).
- Nushell (torch.nu): nu_string(), a double-quoted string with nu's own escapes (JSON's \\uXXXX is not
  one of them); nu_comment() keeps a comment on its line.

Builtins only: the client may import it.
"""
import keyword
import shlex

# nu's escapes in a double-quoted string for the characters that have one
_NU_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def python_string(text):
    """text as a Python string literal of printable ASCII alone: eval() of it gives text back."""
    if not isinstance(text, str):
        raise TypeError("python_string takes a str, not %s" % type(text).__name__)
    return ascii(text)


def python_comment(text):
    """`# text`, refused (ValueError) unless text is printable on one line: what is not ours in it must come
    through python_string()."""
    if not text.isprintable():
        raise ValueError("a comment of a generated script must be printable on one line: %s" % ascii(text))
    return "# " + text


def python_name(text, dotted=False):
    """text when it is a Python identifier that is not a keyword (with dotted: NAME.NAME…), else ValueError."""
    parts = text.split(".") if dotted and isinstance(text, str) else [text]
    if not all(isinstance(p, str) and p.isidentifier() and p.isascii() and not keyword.iskeyword(p) for p in parts):
        raise ValueError("%s is not a Python name" % ascii(text))
    return text


def shell_word(text):
    """text as one word of a POSIX shell command line: single-quoted where it needs it."""
    return shlex.quote(text)


def nu_string(text):
    """text as a Nushell double-quoted string (no interpolation there): escapes nu reads, \\u{…} for the rest
    of what is not printable."""
    return '"%s"' % "".join(_NU_ESCAPES.get(c) or (c if c.isprintable() else "\\u{%x}" % ord(c)) for c in text)


def nu_comment(text):
    """Text for after a `#` in torch.nu: its words on one line, what is not printable left out."""
    return " ".join("".join(c for c in text if c.isprintable() or c.isspace()).split())
