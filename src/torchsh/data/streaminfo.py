"""What `data info` shows of a set of files read by pieces (a Parquet set, Arrow files): from their metadata
alone, never their rows."""


def set_info(pieces, fmt, piece):
    """{format, files, rows, pieces, piece, bytes, schema} of PIECES (parquetstream.ParquetSet, arrowfiles.ArrowSet),
    FMT its format's name and PIECE what one piece is called ("row group")."""
    return {"format": fmt, "files": list(pieces.files), "rows": sum(pieces.piece_rows),
            "pieces": len(pieces.piece_rows), "piece": piece, "bytes": pieces.bytes,
            "schema": {f.name: str(f.type) for f in pieces.schema}}


def plural(n, word):
    """'1 row group', '12 row groups', '5 record batches'."""
    return "%d %s%s" % (n, word, "" if n == 1 else "es" if word.endswith("ch") else "s")


def info_lines(info):
    """`data info`'s lines of a stream (a PieceTable's info())."""
    files = info["files"]
    return ["stream   %s: %s, %s, %s, %s bytes on disk" % (
                info["format"], plural(len(files), "file"), plural(info["rows"], "row"),
                plural(info["pieces"], info["piece"]), format(info["bytes"], ",")),
            "files    %s" % " ".join(files[:8] + (["…+%d" % (len(files) - 8)] if len(files) > 8 else [])),
            "schema   %s" % ", ".join("%s: %s" % kv for kv in info["schema"].items())]
