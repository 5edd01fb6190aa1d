"""Optional plugins that extend lion_nb only through its public seams."""
