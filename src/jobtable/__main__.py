"""``python -m jobtable``: the ``jobtable`` command."""

from jobtable._cli import main

main()
