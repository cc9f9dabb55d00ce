"""The sandbox at the bottom of the stack: warm fork servers that run one job per fork, each job in its
own isolation (network, PID and mount namespaces where permitted, an unprivileged uid, rlimits, a
scrubbed environment), its writes outside its own directories refused and recorded from outside.

A job names its role (``module:function``); the roles live with the code that needs them (the
evaluator's reference, candidate and build jobs, the task checker's reference run). Nothing here
imports torch or any other hipforge package but this one.
"""
