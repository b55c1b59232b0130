from ragjudge.cli import main

main()
