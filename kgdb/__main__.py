from kgdb.cli import main

main()
