import gc

from .cli import main

try:
    raise SystemExit(main())
finally:
    # The process ends here: what the command made is left to the OS. Frozen, it is not walked again by
    # the collections of the interpreter's shutdown (a tenth of a parse's time); finalizers still run.
    gc.freeze()
