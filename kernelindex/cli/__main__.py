from kernelindex.cli.main import entry

entry()
