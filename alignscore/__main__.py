"""``python -m alignscore ...``: the ``alignscore`` command line."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="alignscore")
