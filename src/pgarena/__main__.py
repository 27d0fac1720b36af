from pgarena.cli import main

main()
