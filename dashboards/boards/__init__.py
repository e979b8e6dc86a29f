"""One module per dashboard, each with dashboard(), which returns the
dashboard as a dict; ../generate.py lists them by file name."""
