"""The `kernelindex` command line, on top of everything else: each command module depends only
downward (ingest, services, web, db), and loads what its command needs when it runs, so that
`kernelindex --help` and the ingest commands start without the web stack or torch."""
