"""A LEOScope-like measurement testbed (seed 004) for the leocc lab, on Ray.

Nodes behind terminals and in the cloud join a Ray cluster with resources naming their
terminal (node.py); jobs (jobs.py) are stored in SQLite (store.py) and handed to Ray when due
by the orchestrator (orchestrator.py); on the node a run waits for its trigger, runs one of the
project's measurements and watches the terminal for its owner's traffic (runner.py).
`leocc testbed --help`; docs/testbed.md.
"""
