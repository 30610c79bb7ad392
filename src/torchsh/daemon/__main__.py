from torchsh.daemon.main import main

main()
