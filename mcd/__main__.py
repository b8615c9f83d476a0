"""``python -m mcd``."""

from mcd.cli import main

if __name__ == "__main__":
    main()
