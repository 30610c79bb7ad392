"""The ground under every server of torchd: HTTP/1.1 framing (http.py: bytes -> Request, Response -> bytes, and the
replies made later) and the doors' policy rows (doors.py). Pure: no torch, no daemon state."""
