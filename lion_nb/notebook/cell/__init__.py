"""The cell turn: a ``%%lion`` cell's options, interpolation, plan, run and display."""
