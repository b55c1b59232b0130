from ragjudge.cli import console

console()
