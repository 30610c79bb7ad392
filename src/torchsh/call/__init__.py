"""The call core both faces share: tokens, parse, bind, invoke, results and argument kinds.

cli/ (argv -> text) and api/ (JSON -> JSON) are thin faces over it; it imports neither.
"""
