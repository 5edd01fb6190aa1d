"""The notebook's state: its Session, the errors and signals it keeps, and autosave."""
