import sys

from torchsh.daemon.main import main

sys.exit(main())  # 1: refused an untrusted folder (the client reports it); 0: another torchd serves
