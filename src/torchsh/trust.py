"""What the client and the daemon trust (docs/security.md), builtins only (the client imports it on every
command): a file or folder is ours when lstat (symlinks are never followed) finds the kind we expect, owned
by our effective uid (the owner of what we create, and what SO_PEERCRED reports), and, for a folder, not
writable by group or others (else anyone could plant a socket, token file or log symlink in it). Raw st_mode
bits: the `stat` module is not a builtin."""
import posix

S_IFMT, S_IFDIR, S_IFREG, S_IFSOCK, S_IFLNK = 0o170000, 0o040000, 0o100000, 0o140000, 0o120000
KIND_NAMES = {S_IFDIR: "a folder", S_IFREG: "a regular file", S_IFSOCK: "a socket", S_IFLNK: "a symlink"}
UNTRUSTED_HINT = ("remove it if it is yours, or set XDG_RUNTIME_DIR or TORCHSH_SOCKET to a folder "
                  "of your own with mode 0700")


def untrusted(path, kind, st=None):
    """Why `path` must not be trusted, or None when it is ours. kind: S_IFDIR, S_IFREG or S_IFSOCK.

    Raises FileNotFoundError (an OSError) when there is nothing at `path`: absent is not untrusted.
    `st` is an fstat result for a file already opened with O_NOFOLLOW.
    """
    st = st or posix.lstat(path)
    found = st.st_mode & S_IFMT
    if found != kind:
        return "%s is %s, not %s" % (path, KIND_NAMES.get(found, "something else"), KIND_NAMES[kind])
    me = posix.geteuid()
    if st.st_uid != me:
        return "%s belongs to uid %d, not to you (uid %d)" % (path, st.st_uid, me)
    if kind == S_IFDIR and st.st_mode & 0o022:
        return "%s has mode %04o: other users can put files in it" % (path, st.st_mode & 0o7777)
    if kind == S_IFREG and st.st_mode & 0o022:
        return "%s has mode %04o: other users can write it" % (path, st.st_mode & 0o7777)
    if kind == S_IFREG and st.st_nlink > 1:  # a hard link to another of your files (say ~/.bashrc)
        return "%s has %d hard links: it is another file too" % (path, st.st_nlink)
    return None


